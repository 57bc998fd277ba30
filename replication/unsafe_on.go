//go:build chaos_unsafe_hw

package replication

// UnsafeHighWatermark, set only by the build tag chaos_unsafe_hw, makes a
// leader's high watermark its own log end, whatever its followers hold: an
// acks=all write is acknowledged before any other replica has it. It exists
// for one purpose, to show that the fault harness catches a broker that
// loses acknowledged records (make chaos-broken); a broker built with it
// says so at start.
const UnsafeHighWatermark = true
