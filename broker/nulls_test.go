package broker

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestNullWhereNotAllowed sends null for arrays that cannot be null: Kafka
// closes the connection, and so does Gregor; a null where the schema lets
// it be (Metadata v1's topics: every topic) is answered.
func TestNullWhereNotAllowed(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	null4 := []byte{0xff, 0xff, 0xff, 0xff}
	for _, c := range []struct {
		what   string
		key, v int16
		body   []byte
		closed bool
	}{
		// topics, timeout, validate only
		{"CreateTopics v2, null topics", 19, 2, append(append([]byte{}, null4...), 0, 0, 0, 0, 0), true},
		{"DeleteTopics v1, null topic names", 20, 1, append(append([]byte{}, null4...), 0, 0, 0, 0), true},
		{"Metadata v0, null topics", 3, 0, null4, true},
		{"Metadata v1, null topics", 3, 1, null4, false},
		// null transactional id, acks 1, timeout, null topics
		{"Produce v3, null topics", 0, 3, append([]byte{0xff, 0xff, 0, 1, 0, 0, 0, 0}, null4...), true},
	} {
		w := dialWire(t, b)
		req := kmsg.RequestForKey(c.key)
		req.SetVersion(c.v)
		frame := w.fmt.AppendRequest(nil, req, 1)
		frame = append(frame[:len(frame)-len(req.AppendTo(nil))], c.body...)
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		if err := w.writeRaw(frame); err != nil {
			t.Fatal(err)
		}
		if c.closed {
			if err := w.expectClosed(10 * time.Second); err != nil {
				t.Errorf("%s: %v", c.what, err)
			}
			continue
		}
		if _, err := w.readFrame(10 * time.Second); err != nil {
			t.Errorf("%s: %v, want an answer", c.what, err)
		}
	}
}
