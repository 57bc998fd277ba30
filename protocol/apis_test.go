package protocol

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRegistry(t *testing.T) {
	var r Registry
	if got := r.Ranges(); len(got) != 0 {
		t.Fatalf("empty registry: got ranges %v", got)
	}
	// Out of key order on purpose: Ranges sorts.
	r.Register(18, 0, 4)
	r.Register(3, 0, 12)
	r.Register(0, 0, 11)
	r.Register(75, 0, 0)

	want := []VersionRange{{0, 0, 11}, {3, 0, 12}, {18, 0, 4}, {75, 0, 0}}
	if got := r.Ranges(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got ranges %v, want %v", got, want)
	}
	if vr, ok := r.Lookup(3); !ok || vr != (VersionRange{3, 0, 12}) {
		t.Fatalf("Lookup(3): got %v, %v", vr, ok)
	}
	for _, key := range []int16{1, -1, kmsg.MaxKey + 1, 32767} {
		if vr, ok := r.Lookup(key); ok {
			t.Fatalf("Lookup(%d) of an unregistered key: got %v", key, vr)
		}
	}

	for _, c := range []struct {
		key, version int16
		want         bool
	}{
		{0, 0, true}, {0, 11, true}, {0, 12, false}, {0, -1, false},
		{18, 4, true}, {18, 5, false}, {75, 0, true}, {75, 1, false},
		{1, 4, false}, {-1, 0, false}, {1000, 0, false},
	} {
		if got := r.Supports(c.key, c.version); got != c.want {
			t.Fatalf("Supports(%d, %d): got %v, want %v", c.key, c.version, got, c.want)
		}
	}
}

func TestRegistryPanicsOnProgrammerErrors(t *testing.T) {
	for _, c := range []struct {
		name          string
		key, min, max int16
		want          string
	}{
		{"duplicate", 3, 0, 5, "already registered"},
		{"unknown key", -1, 0, 0, "does not know"},
		{"key past kmsg", kmsg.MaxKey + 1, 0, 0, "does not know"},
		{"min above max", 1, 5, 4, "invalid version range"},
		{"negative min", 1, -1, 4, "invalid version range"},
		{"max above kmsg", 1, 4, kmsg.NewPtrFetchRequest().MaxVersion() + 1, "above kmsg"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r Registry
			r.Register(3, 0, 12)
			defer func() {
				p := recover()
				if p == nil {
					t.Fatalf("Register(%d, %d, %d) did not panic", c.key, c.min, c.max)
				}
				if msg := fmt.Sprint(p); !strings.Contains(msg, c.want) {
					t.Fatalf("got panic %q, want it to say %q", msg, c.want)
				}
			}()
			r.Register(c.key, c.min, c.max)
		})
	}
}

// Every key kmsg knows can be registered up to kmsg's max version.
func TestRegistryAcceptsKmsgMax(t *testing.T) {
	var r Registry
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		if req := kmsg.RequestForKey(key); req != nil {
			r.Register(key, 0, req.MaxVersion())
		}
	}
	if len(r.Ranges()) == 0 {
		t.Fatal("nothing registered")
	}
}

func TestRegistryAppendAPIVersions(t *testing.T) {
	var r Registry
	r.Register(1, 4, 16)
	r.Register(18, 0, 4)
	r.Register(0, 0, 11)

	for _, version := range []int16{0, 3, 4} {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(version)
		r.AppendAPIVersions(resp)

		// Through the wire and back, as a client sees it.
		back := kmsg.NewPtrApiVersionsResponse()
		back.SetVersion(version)
		if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("v%d: decoding our response: %v", version, err)
		}
		var got []VersionRange
		for _, k := range back.ApiKeys {
			got = append(got, VersionRange{k.ApiKey, k.MinVersion, k.MaxVersion})
		}
		want := []VersionRange{{0, 0, 11}, {1, 4, 16}, {18, 0, 4}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("v%d: got ApiKeys %v, want %v", version, got, want)
		}
	}
}

// After registration the registry is read-only and may be read from many
// goroutines; -race checks it.
func TestRegistryConcurrentReads(t *testing.T) {
	var r Registry
	r.Register(0, 0, 11)
	r.Register(1, 4, 16)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for v := range int16(100) {
				_ = r.Supports(1, v%20)
				_, _ = r.Lookup(0)
				resp := kmsg.NewPtrApiVersionsResponse()
				r.AppendAPIVersions(resp)
			}
		})
	}
	wg.Wait()
}

func BenchmarkRegistrySupports(b *testing.B) {
	var r Registry
	r.Register(1, 4, 16)
	for b.Loop() {
		if !r.Supports(1, 12) {
			b.Fatal("not supported")
		}
	}
}
