package protocol

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// VersionRange is the versions of one API the broker serves, Min through Max
// inclusive. It is what ApiVersions advertises for the key.
type VersionRange struct {
	Key, Min, Max int16
}

// Contains reports whether version is within the range.
func (vr VersionRange) Contains(version int16) bool {
	return version >= vr.Min && version <= vr.Max
}

// Registry is the set of APIs the broker serves, each with its version
// range. Every handler registers its own range at startup, and ApiVersions is
// built from the registry, so nothing is advertised that has no handler.
//
// The zero value is an empty registry. Register everything before the
// registry is shared; after that it is only read, and reads are safe from any
// number of goroutines.
type Registry struct {
	// Indexed by API key: only keys kmsg knows can be served, since kmsg
	// decodes the bodies, and a key-indexed array makes Supports, which
	// runs for every request, a bounds check and a load.
	ranges [kmsg.MaxKey + 1]VersionRange
	served [kmsg.MaxKey + 1]bool
	n      int
}

// Register adds an API to the registry. It panics on a programmer error: a
// key registered twice, a key kmsg does not know, a negative or empty
// range, or a max version above what kmsg can decode for that key.
// Registration happens at startup with constants, so a panic there is a bug
// found on the first run.
func (r *Registry) Register(key, minVersion, maxVersion int16) {
	info, ok := lookupAPI(key)
	switch {
	case !ok:
		panic(fmt.Sprintf("protocol: register API key %d: kmsg does not know it", key))
	case r.served[key]:
		panic(fmt.Sprintf("protocol: register %s (key %d): already registered as v%d-%d",
			kmsg.NameForKey(key), key, r.ranges[key].Min, r.ranges[key].Max))
	case minVersion < 0 || minVersion > maxVersion:
		panic(fmt.Sprintf("protocol: register %s (key %d): invalid version range %d-%d",
			kmsg.NameForKey(key), key, minVersion, maxVersion))
	case maxVersion > info.maxVersion:
		panic(fmt.Sprintf("protocol: register %s (key %d): max version %d above kmsg's %d",
			kmsg.NameForKey(key), key, maxVersion, info.maxVersion))
	}
	r.ranges[key] = VersionRange{Key: key, Min: minVersion, Max: maxVersion}
	r.served[key] = true
	r.n++
}

// Lookup returns the range registered for key, if any.
func (r *Registry) Lookup(key int16) (VersionRange, bool) {
	if key < 0 || int(key) > kmsg.MaxKey || !r.served[key] {
		return VersionRange{}, false
	}
	return r.ranges[key], true
}

// Supports reports whether the broker serves this API key at this version.
// A request it does not support closes the connection, except ApiVersions,
// which is answered at v0 with UNSUPPORTED_VERSION and the registry's ranges.
func (r *Registry) Supports(key, version int16) bool {
	vr, ok := r.Lookup(key)
	return ok && vr.Contains(version)
}

// Ranges returns every registered range, sorted by key.
func (r *Registry) Ranges() []VersionRange {
	out := make([]VersionRange, 0, r.n)
	for key, served := range r.served {
		if served {
			out = append(out, r.ranges[key])
		}
	}
	return out
}

// AppendAPIVersions appends an entry per registered API, in key order, to
// the ApiKeys of an ApiVersions response.
func (r *Registry) AppendAPIVersions(resp *kmsg.ApiVersionsResponse) {
	resp.ApiKeys = slices.Grow(resp.ApiKeys, r.n)
	for key, served := range r.served {
		if !served {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey = int16(key)
		k.MinVersion = r.ranges[key].Min
		k.MaxVersion = r.ranges[key].Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
}
