// Command sarama-group consumes a topic to its end with a group of Sarama
// (github.com/IBM/sarama) consumers in one process, each on its own client,
// as compat-tests/console/run.sh runs it against a gregor broker:
//
//	sarama-group -brokers 127.0.0.1:9092 -topic T -group G -members 2 -expect N
//
// Every member marks each record it is given and commits the marked offsets
// when its session ends (and every second meanwhile, Sarama's auto-commit).
// The run stops once the members together have seen N distinct records
// (partition, offset); records seen twice, after a rebalance, are allowed.
// It then closes the members (LeaveGroup) and checks, with a separate
// client, that the group's committed offset of each partition
// (OffsetFetch) equals the partition's end offset (ListOffsets), and that
// the topic holds N records.
//
// It exits 0 when all N records were seen, every member was given records
// and the commits reached the end; otherwise it exits 1 and says which
// check failed (on a timeout, which partitions fell short and the errors
// the members met). Progress goes to stderr, one line per event; -v adds
// Sarama's own log.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "comma-separated bootstrap brokers host:port")
	topic := flag.String("topic", "", "topic to consume (required)")
	group := flag.String("group", "", "consumer group id (required)")
	members := flag.Int("members", 2, "number of group members, each with its own client")
	expect := flag.Int("expect", 0, "number of records the topic holds; the run ends when all were seen (required)")
	timeout := flag.Duration("timeout", 90*time.Second, "give up when not all records were seen within this time")
	version := flag.String("version", sarama.V4_3_1_0.String(), "Kafka version Sarama assumes the broker has (it picks request versions by it)")
	verbose := flag.Bool("v", false, "log Sarama's own messages to stderr")
	flag.Parse()

	log.SetFlags(log.Ltime | log.Lmicroseconds)
	log.SetPrefix("sarama-group: ")
	if *topic == "" || *group == "" || *expect <= 0 || *members <= 0 {
		log.Print("-topic, -group, -expect (> 0) and -members (> 0) are required")
		flag.Usage()
		os.Exit(2)
	}
	if *verbose {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.Ltime|log.Lmicroseconds)
	}
	v, err := sarama.ParseKafkaVersion(*version)
	if err != nil {
		log.Fatalf("-version %q: %v", *version, err)
	}

	r := run{
		brokers: strings.Split(*brokers, ","),
		topic:   *topic,
		group:   *group,
		members: *members,
		expect:  *expect,
		version: v,
		done:    make(chan struct{}),
	}
	r.mu.seen = make(map[record]bool)
	r.mu.perMember = make([]int, *members)
	r.mu.claimed = make([]map[int32]bool, *members)
	for i := range r.mu.claimed {
		r.mu.claimed[i] = make(map[int32]bool)
	}
	if err := r.main(*timeout); err != nil {
		log.Printf("FAIL: %v", err)
		os.Exit(1)
	}
	log.Print("OK")
}

// record identifies one record of the topic.
type record struct {
	partition int32
	offset    int64
}

// run is one test run: the members' shared tally of what they have seen.
type run struct {
	brokers []string
	topic   string
	group   string
	members int
	expect  int
	version sarama.KafkaVersion

	done     chan struct{} // closed once expect distinct records were seen
	doneOnce sync.Once

	mu struct {
		sync.Mutex
		seen      map[record]bool
		dups      int
		perMember []int            // records handed to each member, duplicates included
		claimed   []map[int32]bool // partitions each member was ever assigned
		errs      []string         // errors the members met, in order
	}
}

func (r *run) config(member int) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = fmt.Sprintf("sarama-group-%d", member)
	cfg.Version = r.version
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = true
	cfg.Consumer.Offsets.AutoCommit.Interval = time.Second
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Metadata.RefreshFrequency = 5 * time.Second
	return cfg
}

func (r *run) noteErr(member int, err error) {
	msg := fmt.Sprintf("member %d: %v", member, err)
	log.Print(msg)
	r.mu.Lock()
	r.mu.errs = append(r.mu.errs, msg)
	r.mu.Unlock()
}

// main starts the members, waits until every record was seen or timeout
// passed, stops the members and checks the committed offsets.
func (r *run) main(timeout time.Duration) error {
	log.Printf("%d members in group %q consume topic %q from %v (Sarama assumes Kafka %s), expecting %d records",
		r.members, r.group, r.topic, r.brokers, r.version, r.expect)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type member struct {
		client sarama.Client
		group  sarama.ConsumerGroup
	}
	ms := make([]member, 0, r.members)
	defer func() {
		for _, m := range ms {
			_ = m.group.Close()
			_ = m.client.Close()
		}
	}()
	for i := range r.members {
		client, err := sarama.NewClient(r.brokers, r.config(i))
		if err != nil {
			return fmt.Errorf("member %d: new client: %w", i, err)
		}
		cg, err := sarama.NewConsumerGroupFromClient(r.group, client)
		if err != nil {
			_ = client.Close()
			return fmt.Errorf("member %d: new consumer group: %w", i, err)
		}
		ms = append(ms, member{client, cg})
	}

	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for err := range m.group.Errors() {
				r.noteErr(i, err)
			}
		}()
		go func() {
			defer wg.Done()
			h := &handler{r: r, member: i}
			// Consume returns at each rebalance; the loop joins again.
			for ctx.Err() == nil {
				if err := m.group.Consume(ctx, []string{r.topic}, h); err != nil {
					if errors.Is(err, sarama.ErrClosedConsumerGroup) {
						return
					}
					r.noteErr(i, fmt.Errorf("consume: %w", err))
					select {
					case <-ctx.Done():
					case <-time.After(500 * time.Millisecond):
					}
				}
			}
		}()
	}

	start := time.Now()
	var timedOut bool
	select {
	case <-r.done:
		log.Printf("all %d records seen after %v", r.expect, time.Since(start).Round(time.Millisecond))
	case <-time.After(timeout):
		timedOut = true
	}
	// Ending the sessions runs Cleanup (a synchronous commit); Close then
	// leaves the group and commits anything still marked.
	cancel()
	for i, m := range ms {
		if err := m.group.Close(); err != nil {
			r.noteErr(i, fmt.Errorf("close: %w", err))
		}
	}
	wg.Wait()
	for _, m := range ms {
		_ = m.client.Close()
	}
	ms = nil

	r.mu.Lock()
	seen, dups := len(r.mu.seen), r.mu.dups
	perMember := append([]int(nil), r.mu.perMember...)
	claims := make([]string, len(r.mu.claimed))
	for i, c := range r.mu.claimed {
		claims[i] = fmt.Sprintf("member %d: partitions %v, %d records", i, sortedKeys(c), perMember[i])
	}
	errs := append([]string(nil), r.mu.errs...)
	r.mu.Unlock()
	log.Printf("seen %d distinct records (%d duplicates); %s", seen, dups, strings.Join(claims, "; "))

	ends, committed, err := r.offsets()
	if err != nil {
		return err
	}
	var problems []string
	if timedOut {
		problems = append(problems, fmt.Sprintf("timed out after %v with %d of %d records seen (%s)",
			timeout, seen, r.expect, r.shortfall(ends)))
	}
	var total int64
	for p, end := range ends {
		total += end
		if committed[p] != end {
			problems = append(problems, fmt.Sprintf("partition %d: committed offset %d, end offset %d", p, committed[p], end))
		}
	}
	if total != int64(r.expect) {
		problems = append(problems, fmt.Sprintf("the topic holds %d records (sum of end offsets), expected %d", total, r.expect))
	}
	for i, n := range perMember {
		if n == 0 {
			problems = append(problems, fmt.Sprintf("member %d was given no records (claims: %s)", i, strings.Join(claims, "; ")))
		}
	}
	log.Printf("committed offsets: %s", describeOffsets(ends, committed))
	if len(problems) > 0 {
		if len(errs) > 0 {
			problems = append(problems, fmt.Sprintf("errors the members met: %s", strings.Join(errs, " | ")))
		}
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// offsets reads each partition's end offset and the group's committed
// offset (-1 when none) with a fresh client.
func (r *run) offsets() (ends, committed map[int32]int64, err error) {
	cfg := r.config(r.members)
	cfg.ClientID = "sarama-group-check"
	client, err := sarama.NewClient(r.brokers, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("check client: %w", err)
	}
	defer func() { _ = client.Close() }()
	parts, err := client.Partitions(r.topic)
	if err != nil {
		return nil, nil, fmt.Errorf("partitions of %s: %w", r.topic, err)
	}
	ends = make(map[int32]int64, len(parts))
	for _, p := range parts {
		end, err := client.GetOffset(r.topic, p, sarama.OffsetNewest)
		if err != nil {
			return nil, nil, fmt.Errorf("end offset of %s/%d: %w", r.topic, p, err)
		}
		ends[p] = end
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster admin: %w", err)
	}
	resp, err := admin.ListConsumerGroupOffsets(r.group, map[string][]int32{r.topic: parts})
	if err != nil {
		return nil, nil, fmt.Errorf("OffsetFetch for group %s: %w", r.group, err)
	}
	if !errors.Is(resp.Err, sarama.ErrNoError) {
		return nil, nil, fmt.Errorf("OffsetFetch for group %s: error %w", r.group, resp.Err)
	}
	committed = make(map[int32]int64, len(parts))
	for _, p := range parts {
		b := resp.GetBlock(r.topic, p)
		switch {
		case b == nil:
			committed[p] = -1
		case !errors.Is(b.Err, sarama.ErrNoError):
			return nil, nil, fmt.Errorf("OffsetFetch for group %s, partition %d: error %w", r.group, p, b.Err)
		default:
			committed[p] = b.Offset
		}
	}
	return ends, committed, nil
}

// shortfall says, per partition, how many records were seen of how many.
func (r *run) shortfall(ends map[int32]int64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	count := make(map[int32]int64)
	for rec := range r.mu.seen {
		count[rec.partition]++
	}
	var parts []string
	for _, p := range sortedKeys(ends) {
		parts = append(parts, fmt.Sprintf("partition %d: %d of %d", p, count[p], ends[p]))
	}
	return strings.Join(parts, ", ")
}

func describeOffsets(ends, committed map[int32]int64) string {
	var parts []string
	for _, p := range sortedKeys(ends) {
		parts = append(parts, fmt.Sprintf("%d: %d/%d", p, committed[p], ends[p]))
	}
	return strings.Join(parts, ", ") + " (partition: committed/end)"
}

func sortedKeys[V any](m map[int32]V) []int32 {
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// handler is one member's sarama.ConsumerGroupHandler.
type handler struct {
	r      *run
	member int
}

func (h *handler) Setup(sess sarama.ConsumerGroupSession) error {
	claims := sess.Claims()[h.r.topic]
	sort.Slice(claims, func(i, j int) bool { return claims[i] < claims[j] })
	log.Printf("member %d (%s): generation %d, assigned partitions %v", h.member, sess.MemberID(), sess.GenerationID(), claims)
	h.r.mu.Lock()
	for _, p := range claims {
		h.r.mu.claimed[h.member][p] = true
	}
	h.r.mu.Unlock()
	return nil
}

// Cleanup commits what this member marked before the session ends.
func (h *handler) Cleanup(sess sarama.ConsumerGroupSession) error {
	sess.Commit()
	log.Printf("member %d: generation %d ended, offsets committed", h.member, sess.GenerationID())
	return nil
}

func (h *handler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			// Marked before counted: once all are counted, all are marked.
			sess.MarkMessage(msg, "")
			h.r.saw(h.member, record{msg.Partition, msg.Offset})
		case <-sess.Context().Done():
			return nil
		}
	}
}

func (r *run) saw(member int, rec record) {
	r.mu.Lock()
	r.mu.perMember[member]++
	if r.mu.seen[rec] {
		r.mu.dups++
	}
	r.mu.seen[rec] = true
	n := len(r.mu.seen)
	r.mu.Unlock()
	if n >= r.expect {
		r.doneOnce.Do(func() { close(r.done) })
	}
}
