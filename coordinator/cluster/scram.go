package cluster

// SCRAM credentials in the registry, which AlterUserScramCredentials writes
// and SASL/SCRAM authentication will read: one key per user and mechanism,
//
//	P/scram/<user>/<mechanism>  {"salt":"<base64>","stored_key":"<base64>","server_key":"<base64>","iterations":8192}
//
// with the user name path-escaped (it may hold any character, "/"
// included) and the mechanism as Kafka's code (1 SCRAM-SHA-256, 2
// SCRAM-SHA-512). The value holds what a SCRAM server needs (RFC 5802):
// the salt, StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey =
// HMAC(SaltedPassword, "Server Key") and the iteration count. The salted
// password the request carries is never stored: it is as good as the
// password for logging in.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"net/url"
	"slices"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ScramMechanism is a SCRAM mechanism by Kafka's code for it.
type ScramMechanism int8

// The mechanisms Kafka knows; 0 is its UNKNOWN.
const (
	ScramSHA256 ScramMechanism = 1
	ScramSHA512 ScramMechanism = 2
)

// Valid reports whether m is SCRAM-SHA-256 or SCRAM-SHA-512.
func (m ScramMechanism) Valid() bool { return m == ScramSHA256 || m == ScramSHA512 }

// String returns the mechanism's SASL name, as Kafka's tools print it.
func (m ScramMechanism) String() string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return "UNKNOWN(" + strconv.Itoa(int(m)) + ")"
}

// Hash returns the hash function H of the mechanism (HMAC is built on it);
// nil for a mechanism that is not Valid.
func (m ScramMechanism) Hash() func() hash.Hash {
	switch m {
	case ScramSHA256:
		return sha256.New
	case ScramSHA512:
		return sha512.New
	}
	return nil
}

// ScramKey names one credential: a user's for one mechanism.
type ScramKey struct {
	User      string
	Mechanism ScramMechanism
}

// ScramCredential is what a SCRAM server keeps of a password (RFC 5802
// section 3). Values taken from a Metadata are shared and must not be
// modified.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// NewScramCredential derives the credential of a salted password
// (SaltedPassword = Hi(password, salt, iterations), which Kafka's clients
// compute and send): StoredKey = H(HMAC(SaltedPassword, "Client Key")),
// ServerKey = HMAC(SaltedPassword, "Server Key"). m must be Valid.
func NewScramCredential(m ScramMechanism, salt, saltedPassword []byte, iterations int32) ScramCredential {
	h := m.Hash()
	mac := func(key []byte, msg string) []byte {
		x := hmac.New(h, key)
		x.Write([]byte(msg))
		return x.Sum(nil)
	}
	stored := h()
	stored.Write(mac(saltedPassword, "Client Key"))
	return ScramCredential{
		Salt:       slices.Clone(salt),
		StoredKey:  stored.Sum(nil),
		ServerKey:  mac(saltedPassword, "Server Key"),
		Iterations: iterations,
	}
}

// ScramUpsert stores Credential for Key, replacing any it has.
type ScramUpsert struct {
	Key        ScramKey
	Credential ScramCredential
}

// scramRecord is the value of P/scram/<user>/<mechanism>; the byte slices
// are base64 (standard, padded), as encoding/json writes them.
type scramRecord struct {
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int32  `json:"iterations"`
}

// scramTxnOps bounds the operations of one SCRAM transaction, below etcd's
// default --max-txn-ops (128) as aclTxnOps is.
const scramTxnOps = 64

func (k keyspace) scramPrefix() string { return k.root + "scram/" }

func (k keyspace) scram(sk ScramKey) string {
	return k.scramPrefix() + url.PathEscape(sk.User) + "/" + strconv.Itoa(int(sk.Mechanism))
}

// parseScramKey reads a credential's name back from the part of its key
// after scram/; ok is false for a key this version does not write.
func parseScramKey(tail string) (ScramKey, bool) {
	user, mech, ok := strings.Cut(tail, "/")
	if !ok || user == "" {
		return ScramKey{}, false
	}
	u, err := url.PathUnescape(user)
	if err != nil || url.PathEscape(u) != user {
		return ScramKey{}, false
	}
	v, err := strconv.ParseInt(mech, 10, 8)
	if err != nil || strconv.FormatInt(v, 10) != mech || !ScramMechanism(v).Valid() {
		return ScramKey{}, false
	}
	return ScramKey{User: u, Mechanism: ScramMechanism(v)}, true
}

// AlterScram stores upserts and removes the credentials of deletes, and
// returns once this node's metadata shows the change. gone[i] reports
// whether deletes[i] removed a stored credential. Every key must name a
// user (not "") and a Valid mechanism, and no key may appear twice. Up to
// 64 changes go in one transaction: a failure part way through a larger
// batch leaves the earlier transactions' changes stored.
func (c *Cluster) AlterScram(ctx context.Context, upserts []ScramUpsert, deletes []ScramKey) (gone []bool, err error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	seen := map[ScramKey]bool{}
	ops := make([]clientv3.Op, 0, len(upserts)+len(deletes))
	for i, sk := range append(upsertKeys(upserts), deletes...) {
		if sk.User == "" || !sk.Mechanism.Valid() || seen[sk] {
			return nil, fmt.Errorf("alter SCRAM credentials: bad or repeated credential %q/%v", sk.User, sk.Mechanism)
		}
		seen[sk] = true
		if i < len(upserts) {
			cr := upserts[i].Credential
			ops = append(ops, clientv3.OpPut(c.keys.scram(sk), encode(scramRecord(cr))))
		} else {
			ops = append(ops, clientv3.OpDelete(c.keys.scram(sk)))
		}
	}
	gone = make([]bool, len(deletes))
	var lastRev int64
	for start := 0; start < len(ops); start += scramTxnOps {
		end := min(start+scramTxnOps, len(ops))
		octx, cancel := c.opCtx(ctx)
		resp, err := c.client.Txn(octx).Then(ops[start:end]...).Commit()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("alter SCRAM credentials: %w", err)
		}
		lastRev = resp.Header.Revision
		for j, r := range resp.Responses {
			if i := start + j - len(upserts); i >= 0 {
				gone[i] = r.GetResponseDeleteRange().GetDeleted() > 0
			}
		}
	}
	if lastRev == 0 {
		return gone, nil
	}
	return gone, c.awaitVisible(ctx, lastRev)
}

func upsertKeys(us []ScramUpsert) []ScramKey {
	out := make([]ScramKey, len(us))
	for i, u := range us {
		out[i] = u.Key
	}
	return out
}
