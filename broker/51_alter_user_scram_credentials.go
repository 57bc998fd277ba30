package broker

// AlterUserScramCredentials (key 51), version 0.
//
// Stores and deletes users' SCRAM credentials in the registry
// (coordinator/cluster), where every broker sees them. A client sends the
// salted password (it salts and hashes the password itself); the registry
// keeps only the StoredKey and ServerKey derived from it, with the salt and
// iteration count.
//
// The request needs ALTER on the cluster: without it every user named gets
// CLUSTER_AUTHORIZATION_FAILED, in name order, and nothing changes. As
// Kafka's controller does, a request alters each user at most once: a user
// named a second time (in deletions or upsertions, for the same mechanism
// or another) gets DUPLICATE_RESOURCE and none of its changes are made.
// Kafka's kafka-configs therefore cannot set SCRAM-SHA-256 and
// SCRAM-SHA-512 for one user in one command, on Kafka 4 or here. Each
// change is checked, deletions first and then upsertions, each user's
// first failure being its result: an empty user name gets
// UNACCEPTABLE_CREDENTIAL, a mechanism other than SCRAM-SHA-256 (1) and
// SCRAM-SHA-512 (2) UNSUPPORTED_SASL_MECHANISM, iterations outside
// 4096-16384 UNACCEPTABLE_CREDENTIAL, a deletion of a credential that is
// not stored RESOURCE_NOT_FOUND. An empty salted password, which no client
// sends, gets UNACCEPTABLE_CREDENTIAL (Kafka fails it with
// UNKNOWN_SERVER_ERROR). The changes that pass are written together and
// answered once this broker's view shows them.
//
// Results come as Kafka orders them, one per user: the users whose
// deletion was made, then those whose upsertion was, then those that
// failed; within each group in the order the request first names them
// (Kafka's follows its hash maps).

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var alterScramAPI = handler{key: 51, min: 0, max: 0, handle: (*Broker).handleAlterUserScramCredentials}

// The iteration counts Kafka accepts for both mechanisms.
const (
	scramMinIterations = 4096
	scramMaxIterations = 16384
)

// scramFailure is a user's failed result.
type scramFailure struct {
	code protocol.ErrorCode
	msg  string
}

func (b *Broker) handleAlterUserScramCredentials(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	if !c.authorizedCluster(acl.OpAlter) {
		var users []string
		for _, d := range req.Deletions {
			users = append(users, d.Name)
		}
		for _, u := range req.Upsertions {
			users = append(users, u.Name)
		}
		slices.Sort(users)
		code, msg := notAuthorized(acl.OpAlter)
		for _, u := range slices.Compact(users) {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode, res.ErrorMessage = u, code, msg
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}

	md := b.cluster.Snapshot()
	failed := map[string]scramFailure{}
	var failedOrder []string
	fail := func(user string, code protocol.ErrorCode, msg string) {
		if _, ok := failed[user]; !ok {
			failedOrder = append(failedOrder, user)
		}
		failed[user] = scramFailure{code, msg}
	}
	const twice = "The request alters the SCRAM credentials of this user more than once."
	dels := map[string]cluster.ScramKey{}
	var delOrder []string
	for _, d := range req.Deletions {
		if _, ok := failed[d.Name]; ok {
			continue
		}
		if _, ok := dels[d.Name]; ok {
			delete(dels, d.Name)
			fail(d.Name, protocol.DuplicateResource, twice)
			continue
		}
		key := cluster.ScramKey{User: d.Name, Mechanism: cluster.ScramMechanism(d.Mechanism)}
		if code, msg := checkScramUser(key); code != protocol.None {
			fail(d.Name, code, msg)
			continue
		}
		if _, ok := md.SCRAM[key]; !ok {
			fail(d.Name, protocol.ResourceNotFound, notStored(key))
			continue
		}
		dels[d.Name] = key
		delOrder = append(delOrder, d.Name)
	}
	ups := map[string]cluster.ScramUpsert{}
	var upOrder []string
	for _, u := range req.Upsertions {
		if _, ok := failed[u.Name]; ok {
			continue
		}
		_, del := dels[u.Name]
		_, up := ups[u.Name]
		if del || up {
			delete(dels, u.Name)
			delete(ups, u.Name)
			fail(u.Name, protocol.DuplicateResource, twice)
			continue
		}
		key := cluster.ScramKey{User: u.Name, Mechanism: cluster.ScramMechanism(u.Mechanism)}
		if code, msg := checkScramUpsertion(key, u.Iterations, u.SaltedPassword); code != protocol.None {
			fail(u.Name, code, msg)
			continue
		}
		ups[u.Name] = cluster.ScramUpsert{Key: key,
			Credential: cluster.NewScramCredential(key.Mechanism, u.Salt, u.SaltedPassword, u.Iterations)}
		upOrder = append(upOrder, u.Name)
	}
	delOrder = slices.DeleteFunc(delOrder, func(u string) bool { _, ok := dels[u]; return !ok })
	upOrder = slices.DeleteFunc(upOrder, func(u string) bool { _, ok := ups[u]; return !ok })

	if len(delOrder)+len(upOrder) > 0 {
		delKeys := make([]cluster.ScramKey, len(delOrder))
		for i, u := range delOrder {
			delKeys[i] = dels[u]
		}
		upserts := make([]cluster.ScramUpsert, len(upOrder))
		for i, u := range upOrder {
			upserts[i] = ups[u]
		}
		gone, err := b.cluster.AlterScram(ctx, upserts, delKeys)
		if err == nil {
			// A deletion that found nothing lost a race with another
			// request deleting the same credential.
			made := delOrder[:0:0]
			for i, u := range delOrder {
				if gone[i] {
					made = append(made, u)
				} else {
					fail(u, protocol.ResourceNotFound, notStored(dels[u]))
				}
			}
			delOrder = made
		} else {
			code := protocol.UnknownServerError
			if errors.Is(err, cluster.ErrNotVisible) || errors.Is(err, context.DeadlineExceeded) {
				code = protocol.RequestTimedOut
			} else {
				b.logger.Warn("altering SCRAM credentials failed", "err", err)
			}
			for _, u := range slices.Concat(delOrder, upOrder) {
				fail(u, code, err.Error())
			}
			delOrder, upOrder = nil, nil
		}
	}

	for _, u := range slices.Concat(delOrder, upOrder) {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = u
		resp.Results = append(resp.Results, res)
	}
	for _, u := range failedOrder {
		f := failed[u]
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = u, int16(f.code), kmsg.StringPtr(f.msg)
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// checkScramUser checks what deletions and upsertions share: a user name
// and a known mechanism.
func checkScramUser(key cluster.ScramKey) (protocol.ErrorCode, string) {
	switch {
	case key.User == "":
		return protocol.UnacceptableCredential, "A SCRAM credential needs a user name; it is empty."
	case !key.Mechanism.Valid():
		return protocol.UnsupportedSASLMechanism, "SCRAM mechanism " + key.Mechanism.String() +
			" is not known: it is SCRAM-SHA-256 (1) or SCRAM-SHA-512 (2)."
	}
	return protocol.None, ""
}

// checkScramUpsertion checks an upsertion beyond its user and mechanism.
func checkScramUpsertion(key cluster.ScramKey, iterations int32, saltedPassword []byte) (protocol.ErrorCode, string) {
	if code, msg := checkScramUser(key); code != protocol.None {
		return code, msg
	}
	switch {
	case iterations < scramMinIterations:
		return protocol.UnacceptableCredential, "Iterations must be at least 4096."
	case iterations > scramMaxIterations:
		return protocol.UnacceptableCredential, "Iterations must be at most 16384."
	case len(saltedPassword) == 0:
		return protocol.UnacceptableCredential, "The salted password is empty."
	}
	return protocol.None, ""
}

// notStored is the message of a deletion of a credential that is not
// stored.
func notStored(key cluster.ScramKey) string {
	return "No " + key.Mechanism.String() + " credential is stored for this user."
}
