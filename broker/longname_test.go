package broker

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

// TestDeleteLongTopicNameRestart is issue 27's third report, through the
// broker: deleting a topic with a legal 249-character name renamed its
// partitions' dirs to names over 255 bytes; the rename failed, and every
// later start failed ("file name too long"). The topic must go, the broker
// start again, and the name be usable again.
func TestDeleteLongTopicNameRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := strings.Repeat("n", 249)
	b, err := tryStart(t, 1, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	w := dialWire(t, b)
	w.createTopic(name, 12, nil) // partition 11: the longest dir names
	for p := range int32(12) {
		checkCode(t, "produce", w.producePartition(-1, name, p, buildBatch(t, plainHeader(), "v", 3)).ErrorCode, protocol.None)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(6)
	req.TimeoutMillis = 30000
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr(name)
	req.Topics = append(req.Topics, rt)
	resp := w.mustRoundTrip(req).(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 1 {
		t.Fatalf("delete response: %+v", resp)
	}
	checkCode(t, "delete the 249-character topic", resp.Topics[0].ErrorCode, protocol.None)
	waitFor(t, 30*time.Second, "partition dirs removed", func() error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), name[:100]) {
				return &os.PathError{Op: "still there", Path: e.Name(), Err: os.ErrExist}
			}
		}
		return nil
	})
	b.Close()

	b, err = tryStart(t, 1, nil, dir)
	if err != nil {
		t.Fatalf("start after deleting a 249-character topic: %v", err)
	}
	defer b.Close()
	w = dialWire(t, b)
	w.createTopic(name, 1, nil)
	if end := w.logEnd(name, 0); end != 0 {
		t.Errorf("the re-created topic ends at %d, want 0", end)
	}
}
