//go:build !chaos_unsafe_hw

package replication

// UnsafeHighWatermark is false in every real build. See unsafe_on.go.
const UnsafeHighWatermark = false
