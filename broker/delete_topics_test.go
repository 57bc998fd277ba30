package broker

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

// TestDeleteTopicsThenMetadata deletes topics and lists the broker's topics
// at once, as client test suites clean up and check: a Metadata request
// sent after DeleteTopics was answered never lists the topic, on the same
// connection or another. (Kafka 4.4, one KRaft node, listed the deleted
// topic in 1 of 10 such rounds in the compat lab's measurement: its broker
// applies the deletion a moment after the controller answers. Gregor
// answers DeleteTopics once its own view has the deletion.)
func TestDeleteTopicsThenMetadata(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w, other := dialWire(t, b), dialWire(t, b)
	for i := range 20 {
		name := fmt.Sprintf("gone-%d", i)
		w.createTopic(name, 2, nil)
		if !slices.Contains(w.topicNames(), name) {
			t.Fatalf("%s not listed after its creation was answered", name)
		}
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(6)
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
		resp := w.mustRoundTrip(req).(*kmsg.DeleteTopicsResponse)
		if len(resp.Topics) != 1 {
			t.Fatalf("delete %s: %d results", name, len(resp.Topics))
		}
		checkCode(t, "delete "+name, resp.Topics[0].ErrorCode, protocol.None)
		conn := w
		if i%2 == 1 {
			conn = other
		}
		if slices.Contains(conn.topicNames(), name) {
			t.Fatalf("round %d: %s listed by a Metadata request sent after its deletion was answered", i, name)
		}
	}
}
