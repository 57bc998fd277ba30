package broker

import "testing"

// TestPageCacheSettings: -1 picks a window only where free pages go back to
// a hypervisor, and prefaulting only without a window; set values stay.
func TestPageCacheSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		keep, prefault         int64
		reporting              bool
		wantKeep, wantPrefault int64
	}{
		{-1, -1, true, AutoPageCacheKeepBytes, 0},
		{-1, -1, false, 0, AutoPrefaultBytes},
		{0, -1, true, 0, AutoPrefaultBytes},
		{8 << 20, -1, false, 8 << 20, 0},
		{-1, 4 << 20, true, AutoPageCacheKeepBytes, 4 << 20},
		{0, 0, true, 0, 0},
	} {
		keep, prefault := pageCacheSettings(tc.keep, tc.prefault, tc.reporting)
		if keep != tc.wantKeep || prefault != tc.wantPrefault {
			t.Errorf("pageCacheSettings(%d, %d, %v) = %d, %d; want %d, %d",
				tc.keep, tc.prefault, tc.reporting, keep, prefault, tc.wantKeep, tc.wantPrefault)
		}
	}
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
	c.LogPageCacheKeepBytes = -2
	if err := c.Validate(); err == nil {
		t.Error("log.pagecache.keep.bytes -2 accepted")
	}
}
