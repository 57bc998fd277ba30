// Package edges sends a broker hand-made request frames at the edges of
// the wire format, one API version at a time, and records what the broker
// does with each: answers (and with which error codes) or closes the
// connection. The outcomes of Apache Kafka are kept in a file, so the same
// frames sent to another broker show where it answers differently.
//
// For every API version both brokers serve, the frames are:
//
//   - empty: the request with every array, string and byte field empty;
//   - null F: the same with field F (a top-level array, string or bytes
//     field, or one of those inside the single element of a top-level
//     array) sent as null, whether or not the schema lets it be;
//   - truncated: the empty request missing its last byte;
//   - trailing: the empty request with one byte too many.
//
// Where a null goes is found without a schema of our own: the request is
// encoded twice, with the field empty and with one element, and the first
// byte that differs lies inside the field's length.
package edges

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "embed"
	"os"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Case is one frame to send: an API version and a variant of its request.
type Case struct {
	Key     int16
	Version int16
	Variant string
}

func (c Case) String() string {
	return fmt.Sprintf("%s v%d %s", kmsg.NameForKey(c.Key), c.Version, c.Variant)
}

// Outcome says what a broker did with a case's frame: "closed", "silent"
// (no answer before the deadline) or "answered" followed by the sorted
// non-zero error codes found anywhere in the response.
type Outcome string

// answerWait bounds the wait for one answer. Every request sent is empty or
// nearly so and asks for no waiting, so a broker answers at once or not at
// all.
const answerWait = 5 * time.Second

// Cases lists the cases of every API version in served, sorted.
func Cases(served map[int16][2]int16) []Case {
	var out []Case
	for key, r := range served {
		for v := r[0]; v <= r[1]; v++ {
			req := baseRequest(key, v)
			if req == nil {
				continue
			}
			out = append(out, Case{key, v, "empty"}, Case{key, v, "trailing"})
			if len(req.AppendTo(nil)) > 0 {
				out = append(out, Case{key, v, "truncated"})
			}
			for _, f := range nullable(req) {
				out = append(out, Case{key, v, "null " + f})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Variant < b.Variant
	})
	return out
}

// baseRequest is the request of key at version v with every field at its
// default and the few settings that would make a broker wait set not to;
// nil when kmsg does not know that version.
func baseRequest(key, v int16) kmsg.Request {
	req := kmsg.RequestForKey(key)
	if req == nil || v > req.MaxVersion() {
		return nil
	}
	req.SetVersion(v)
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		r.MaxWaitMillis = 0
	case *kmsg.ProduceRequest:
		r.Acks = 1
	}
	return req
}

// nullable names the fields of req that a case sends as null: top-level
// arrays, strings and bytes present at req's version, and those of the
// element of each top-level array of structs.
func nullable(req kmsg.Request) []string {
	var out []string
	top := reflect.ValueOf(req).Elem()
	for i := 0; i < top.NumField(); i++ {
		f := top.Type().Field(i)
		if !f.IsExported() || !nullKind(f.Type) {
			continue
		}
		if _, ok := frameWithNull(req, f.Name); ok {
			out = append(out, f.Name)
		}
		if f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() != reflect.Struct {
			continue
		}
		et := f.Type.Elem()
		for j := 0; j < et.NumField(); j++ {
			g := et.Field(j)
			if !g.IsExported() || !nullKind(g.Type) {
				continue
			}
			if _, ok := frameWithNull(req, f.Name+"."+g.Name); ok {
				out = append(out, f.Name+"."+g.Name)
			}
		}
	}
	return out
}

// nullKind reports whether a field of type t has a length on the wire that
// a null can stand in for.
func nullKind(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Slice:
		return true
	case reflect.Pointer:
		return t.Elem().Kind() == reflect.String
	}
	return false
}

// setLen sets field v (a string, *string, []byte or slice) to zero
// elements (n = 0) or one (n = 1), never to nil; n < 0 sets its zero value
// (nil, "").
func setLen(v reflect.Value, n int) {
	if n < 0 {
		v.Set(reflect.Zero(v.Type()))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(strings.Repeat("a", n))
	case reflect.Pointer:
		s := strings.Repeat("a", n)
		v.Set(reflect.ValueOf(&s))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			defaults(s.Index(i))
		}
		v.Set(s)
	}
}

// defaults gives a struct element kmsg's defaults.
func defaults(v reflect.Value) {
	if d, ok := v.Addr().Interface().(interface{ Default() }); ok {
		d.Default()
	}
}

// encodeWith encodes a copy of req with path (Field or Field.Sub) holding
// n elements (its zero value for n < 0); a nested field's parent holds one
// element.
func encodeWith(req kmsg.Request, path string, n int) []byte {
	cp := reflect.New(reflect.TypeOf(req).Elem())
	cp.Elem().Set(reflect.ValueOf(req).Elem())
	parent, child, nested := strings.Cut(path, ".")
	f := cp.Elem().FieldByName(parent)
	if nested {
		setLen(f, 1)
		f = f.Index(0).FieldByName(child)
	}
	setLen(f, n)
	r := cp.Interface().(kmsg.Request)
	return r.AppendTo(nil)
}

// frameWithNull returns req's body with the field at path sent as null; ok
// is false when the field is not on the wire at req's version (or is a
// tagged field, which has no null of its own).
func frameWithNull(req kmsg.Request, path string) (body []byte, ok bool) {
	empty, one := encodeWith(req, path, 0), encodeWith(req, path, 1)
	p := 0
	for p < len(empty) && p < len(one) && empty[p] == one[p] {
		p++
	}
	if p == len(empty) {
		return nil, false
	}
	if req.IsFlexible() {
		// A compact length: 1 for empty, 0 for null. A tagged field is
		// left out while it holds its zero value, so its encoding grows
		// when it is set at all: such a field has a null of its own only
		// inside its tag, and is left alone.
		if len(encodeWith(req, path, -1)) != len(empty) || empty[p] != 1 {
			return nil, false
		}
		empty[p] = 0
		return empty, true
	}
	// An int32 length (arrays, bytes) differs in its last byte, an int16
	// one (strings) likewise.
	width := 4
	if t := fieldType(req, path); t.Kind() == reflect.String || t.Kind() == reflect.Pointer {
		width = 2
	}
	start := p - (width - 1)
	if start < 0 || !bytes.Equal(empty[start:p+1], make([]byte, width)) {
		return nil, false
	}
	for i := start; i <= p; i++ {
		empty[i] = 0xff
	}
	return empty, true
}

func fieldType(req kmsg.Request, path string) reflect.Type {
	t := reflect.TypeOf(req).Elem()
	parent, child, nested := strings.Cut(path, ".")
	f, _ := t.FieldByName(parent)
	if !nested {
		return f.Type
	}
	g, _ := f.Type.Elem().FieldByName(child)
	return g.Type
}

// Body returns the request body a case sends.
func (c Case) Body() ([]byte, error) {
	req := baseRequest(c.Key, c.Version)
	if req == nil {
		return nil, fmt.Errorf("%v: version unknown to kmsg", c)
	}
	empty := req.AppendTo(nil)
	switch {
	case c.Variant == "empty":
		return empty, nil
	case c.Variant == "truncated":
		if len(empty) == 0 {
			return nil, fmt.Errorf("%v: the request has no body to cut", c)
		}
		return empty[:len(empty)-1], nil
	case c.Variant == "trailing":
		return append(empty, 0), nil
	case strings.HasPrefix(c.Variant, "null "):
		body, ok := frameWithNull(req, strings.TrimPrefix(c.Variant, "null "))
		if !ok {
			return nil, fmt.Errorf("%v: no such field on the wire", c)
		}
		return body, nil
	}
	return nil, fmt.Errorf("%v: unknown variant", c)
}

// frame is a whole request frame: size, header (v1, or v2 for flexible
// versions) with client id "gregor-edges", body.
func frame(c Case, corr int32, body []byte) []byte {
	req := kmsg.RequestForKey(c.Key)
	req.SetVersion(c.Version)
	b := make([]byte, 4, 64+len(body))
	b = binary.BigEndian.AppendUint16(b, uint16(c.Key))
	b = binary.BigEndian.AppendUint16(b, uint16(c.Version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	id := "gregor-edges"
	b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	b = append(b, id...)
	if req.IsFlexible() {
		b = append(b, 0) // no header tags
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// Prober sends cases to one broker, reconnecting after each close.
type Prober struct {
	Addr string
	conn net.Conn
	rd   *bufio.Reader
	corr int32
}

// Close closes the prober's connection.
func (p *Prober) Close() {
	if p.conn != nil {
		p.conn.Close()
		p.conn = nil
	}
}

// Send sends one case and returns what the broker did with it; err is for
// what is not the broker's doing (no connection at all, a bad case).
func (p *Prober) Send(ctx context.Context, c Case) (Outcome, error) {
	body, err := c.Body()
	if err != nil {
		return "", err
	}
	return p.send(ctx, c, body)
}

// send sends body as the request of c's API version.
func (p *Prober) send(ctx context.Context, c Case, body []byte) (Outcome, error) {
	if p.conn == nil {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", p.Addr)
		if err != nil {
			return "", err
		}
		p.conn, p.rd = conn, bufio.NewReader(conn)
	}
	p.corr++
	p.conn.SetDeadline(time.Now().Add(answerWait))
	if _, err := p.conn.Write(frame(c, p.corr, body)); err != nil {
		p.Close()
		return "closed", nil
	}
	var size [4]byte
	if _, err := io.ReadFull(p.rd, size[:]); err != nil {
		p.Close()
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			return "silent", nil
		}
		return "closed", nil
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 64<<20 {
		p.Close()
		return "", fmt.Errorf("%v: a %d-byte answer", c, n)
	}
	resp := make([]byte, n)
	if _, err := io.ReadFull(p.rd, resp); err != nil {
		p.Close()
		return "closed", nil
	}
	return answered(c, p.corr, resp), nil
}

// answered decodes a response and names its non-zero error codes.
func answered(c Case, corr int32, resp []byte) Outcome {
	if len(resp) < 4 || int32(binary.BigEndian.Uint32(resp)) != corr {
		return "answered with another correlation id"
	}
	resp = resp[4:]
	req := kmsg.RequestForKey(c.Key)
	req.SetVersion(c.Version)
	if req.IsFlexible() && c.Key != 18 { // ApiVersions answers with header v0
		if len(resp) < 1 || resp[0] != 0 {
			return "answered with header tags"
		}
		resp = resp[1:]
	}
	r := req.ResponseKind()
	r.SetVersion(c.Version)
	if c.Key == 18 && len(resp) >= 2 && binary.BigEndian.Uint16(resp) != 0 {
		r.SetVersion(0) // an ApiVersions error answer is v0
	}
	if err := r.ReadFrom(resp); err != nil {
		return "answered undecodable"
	}
	codes := map[int16]bool{}
	errorCodes(reflect.ValueOf(r).Elem(), codes)
	if len(codes) == 0 {
		return "answered"
	}
	var list []string
	for code := range codes {
		list = append(list, strconv.Itoa(int(code)))
	}
	slices.SortFunc(list, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	return Outcome("answered " + strings.Join(list, ","))
}

func errorCodes(v reflect.Value, into map[int16]bool) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 {
				if code := int16(v.Field(i).Int()); code != 0 {
					into[code] = true
				}
				continue
			}
			if f.IsExported() {
				errorCodes(v.Field(i), into)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := 0; i < v.Len(); i++ {
			errorCodes(v.Index(i), into)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			errorCodes(v.Elem(), into)
		}
	}
}

// Served asks the broker at addr for its API versions.
func Served(ctx context.Context, addr string) (map[int16][2]int16, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(answerWait))
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor-edges", "1"
	c := Case{Key: 18, Version: 3}
	if _, err := conn.Write(frame(c, 1, req.AppendTo(nil))); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, buf); err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if len(buf) < 4 {
		return nil, errors.New("short ApiVersions answer")
	}
	if err := resp.ReadFrom(buf[4:]); err != nil {
		return nil, err
	}
	out := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return out, nil
}

// Intersect keeps the versions both a and b serve.
func Intersect(a, b map[int16][2]int16) map[int16][2]int16 {
	out := map[int16][2]int16{}
	for k, x := range a {
		y, ok := b[k]
		if !ok {
			continue
		}
		lo, hi := max(x[0], y[0]), min(x[1], y[1])
		if lo <= hi {
			out[k] = [2]int16{lo, hi}
		}
	}
	return out
}

// Expected is a recorded broker's outcome for each case.
type Expected struct {
	Cases    []Case
	Outcomes map[Case]Outcome
}

// Parse reads a file of "api<TAB>version<TAB>variant<TAB>outcome" lines;
// lines starting with # are comments.
func Parse(r io.Reader) (*Expected, error) {
	e := &Expected{Outcomes: map[Case]Outcome{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: %d fields, want 4", n, len(f))
		}
		key, err1 := strconv.ParseInt(f[0], 10, 16)
		v, err2 := strconv.ParseInt(f[1], 10, 16)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		c := Case{int16(key), int16(v), f[2]}
		e.Cases = append(e.Cases, c)
		e.Outcomes[c] = Outcome(f[3])
	}
	return e, sc.Err()
}

// Write writes outcomes in the format Parse reads, with a header comment.
func Write(w io.Writer, header string, cases []Case, outcomes map[Case]Outcome) error {
	bw := bufio.NewWriter(w)
	for _, l := range strings.Split(header, "\n") {
		fmt.Fprintf(bw, "# %s\n", l)
	}
	for _, c := range cases {
		fmt.Fprintf(bw, "%d\t%d\t%s\t%s\n", c.Key, c.Version, c.Variant, outcomes[c])
	}
	return bw.Flush()
}

// Run sends every case to the broker at addr, in order, on as few
// connections as the broker allows.
func Run(ctx context.Context, addr string, cases []Case) (map[Case]Outcome, error) {
	p := &Prober{Addr: addr}
	defer p.Close()
	out := map[Case]Outcome{}
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		o, err := p.Send(ctx, c)
		if err != nil {
			return nil, err
		}
		out[c] = o
	}
	return out, nil
}

//go:embed testdata/kafka.tsv
var kafkaOutcomes []byte

// Load reads recorded outcomes from file, or the built-in record of Kafka
// when file is empty.
func Load(file string) (*Expected, error) {
	data := kafkaOutcomes
	if file != "" {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, err
		}
	}
	return Parse(bytes.NewReader(data))
}

// Check sends exp's cases to the broker at addr and describes each outcome
// that differs from exp's, one line per case.
func Check(ctx context.Context, addr string, exp *Expected) ([]string, error) {
	got, err := Run(ctx, addr, exp.Cases)
	if err != nil {
		return nil, err
	}
	var diffs []string
	for _, c := range exp.Cases {
		if got[c] != exp.Outcomes[c] {
			diffs = append(diffs, fmt.Sprintf("%v: %s, Kafka %s", c, got[c], exp.Outcomes[c]))
		}
	}
	return diffs, nil
}

// Warm waits until the broker at addr can answer the requests whose answer
// depends on work a fresh broker does on first use: a group coordinator
// (Kafka creates and loads its offsets topic on the first FindCoordinator)
// and producer ids (Kafka fetches a block of them from its controller).
// Until then Kafka answers them with retriable errors, which are not what
// the recorded outcomes compare.
func Warm(ctx context.Context, addr string) error {
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(1)
	fc.CoordinatorKey = "gregor-edges"
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.SetVersion(0)
	ip.TransactionTimeoutMillis = 60000
	for _, req := range []kmsg.Request{fc, ip} {
		c := Case{Key: req.Key(), Version: req.GetVersion()}
		for {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("warming up %s: %w", kmsg.NameForKey(c.Key), err)
			}
			p := &Prober{Addr: addr}
			o, err := p.send(ctx, c, req.AppendTo(nil))
			p.Close()
			if err != nil {
				return err
			}
			if o == "answered" {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}
