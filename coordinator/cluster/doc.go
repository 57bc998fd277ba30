// Package cluster keeps Gregor's cluster metadata in etcd: the cluster id,
// broker registrations, topics and their partition states, dynamic configs,
// producer id blocks, ACLs, SCRAM credentials and client quotas. It is the only package
// that talks to etcd.
//
// # Modes
//
// With Config.Endpoints empty, Open starts an embedded single etcd member in
// DataDir/etcd and uses it in-process: a single node needs nothing else.
// With endpoints, every broker connects to the same external etcd cluster.
// The code path after connecting is the same.
//
// # Metadata cache
//
// Open loads every key under the prefix at one revision R and then watches
// the prefix from R+1, so no change can fall between the two. Each watch
// response (etcd never splits one revision, i.e. one transaction, across
// responses) produces a new immutable Metadata, published through an
// atomic pointer: Snapshot never locks and never sees half a transaction.
// When the watch ends (history compacted past it, leader lost, stream
// broken) the cache is reloaded whole and watched again.
//
// Every write method returns only after the cache shows the write, so a
// CreateTopics followed by a Metadata request on the same broker sees the
// topic. Other nodes see it when their own watch delivers it.
//
// # Key layout
//
// All keys start with Config.Prefix (default "/gregor"), shown as P. All
// values are JSON objects; fields are only ever added, and readers ignore
// fields they do not know. Node ids and partition numbers are canonical
// decimal; topic ids are Kafka's unpadded base64url form (22 characters).
//
//	P/cluster_id                 {"id":"<22-char base64url>"}
//	    Created once, by the first Open, with a create-if-absent transaction.
//	P/brokers/<node id>          {"host":"h","port":9092,"rack":"r","owner":"o",
//	                              "endpoints":[{"listener":"INTERNAL","host":"h",
//	                              "port":9092,"security_protocol":"PLAINTEXT"},...]}
//	    A live broker. Bound to the broker's lease (TTL Config.SessionTTL):
//	    gone when the broker closes (lease revoked) or stops keeping it
//	    alive (lease expired). "rack" is absent when the broker has none.
//	    "owner" (BrokerInfo.Owner) lets a restarted broker take over the
//	    key of its killed previous run without waiting for the lease.
//	    "shutting_down" is set by ControlledShutdown. "host" and "port" are
//	    the inter-broker listener's endpoint; "endpoints" has every
//	    listener's, by name. A record without "endpoints" (written before
//	    they existed) stands for the one endpoint on every listener.
//	P/registered/<node id>       {"host":"h","port":9092,"rack":"r","endpoints":[...]}
//	    A broker that registered once, written with each registration and
//	    kept after its lease: listed as fenced while not live, until
//	    UnregisterBroker deletes it.
//	P/topics/<name>              {"id":"<topic id>","partitions":3}
//	    A topic: its id and partition count. Partitions 0..partitions-1
//	    each have a partition state key; all are written in one transaction.
//	P/topic_ids/<topic id>       {"name":"<name>"}
//	    Index from id to name; its create-if-absent compare keeps ids unique.
//	P/partitions/<name>/<p>      {"leader":1,"leader_epoch":0,"isr":[1,2],
//	                              "partition_epoch":0,"replicas":[1,2],
//	                              "adding_replicas":[3],"removing_replicas":[1]}
//	    Partition state: replicas (preferred leader first), leader (-1: none),
//	    leader epoch, in-sync replicas, and the partition epoch that every
//	    change of this state increments and compares. adding_replicas and
//	    removing_replicas (sorted; absent when empty) are set while a
//	    reassignment is in flight (see Reassignment).
//	P/configs/topics/<name>      {"config":{"retention.ms":"86400000"}}
//	P/configs/brokers/<node id>  {"config":{...}}
//	P/configs/brokers/default    {"config":{...}}
//	P/configs/groups/<group id>  {"config":{"share.auto.offset.reset":"earliest"}}  (group id path-escaped)
//	    Dynamic configs by Kafka name, as strings. Absent when empty.
//	P/acls/<resource type>/<pattern type>/<name>/<principal>/<host>/<operation>/<permission>  {}
//	    One ACL binding, spelled out in its key (Kafka's enum codes; name,
//	    principal and host path-escaped): see acls.go.
//	P/scram/<user>/<mechanism>   {"salt":"<base64>","stored_key":"<base64>",
//	                              "server_key":"<base64>","iterations":8192}
//	    A user's SCRAM credential for one mechanism (1 SCRAM-SHA-256,
//	    2 SCRAM-SHA-512; user path-escaped): see scram.go.
//	P/quotas/users/<user>[/clients/<client id>]  {"quotas":{"producer_byte_rate":1048576}}
//	P/quotas/clients/<client id>  P/quotas/ips/<ip>
//	    One client quota entity's quotas (Kafka's keys, double values);
//	    names path-escaped, "<default>" for the default entity: see quotas.go.
//	P/controller/<lease id hex>  {"node":1}
//	    A controller candidate, bound to its broker's registration lease.
//	    The candidate with the lowest create revision is the controller,
//	    and that revision is its epoch.
//	P/producer_id_block          {"broker":1,"first":2000,"count":1000}
//	    The last block of producer ids handed out (to node "broker"); the
//	    next block starts at first+count. Not cached.
//
// Topic names are legal Kafka names ([a-zA-Z0-9._-]), so they never contain
// "/" and one topic's partition keys are exactly those under
// P/partitions/<name>/.
//
// # Transactions
//
// Each change is one etcd transaction whose compares make it safe against
// concurrent writers in other processes: create-if-absent (cluster id,
// registration, topic name and id), or compare-and-swap on a mod revision
// read just before (partition growth, configs, producer id blocks), retried
// a bounded number of times. An etcd lease alone is not mutual exclusion:
// roles handed out through etcd (the controller, partition leaders) will
// carry an epoch that their writes compare.
//
// A topic is created in one transaction of partitions+3 operations. etcd
// limits a transaction to --max-txn-ops operations (default 128); the
// embedded member is started with a limit of 16384, and an external etcd
// must be given a limit above the largest topic's partition count.
//
// # Controller
//
// Every registered broker stands for controller with each registration
// session: it puts a candidate key under P/controller bound to the
// session's lease and waits for every older candidate key to go (etcd's
// election recipe). The oldest candidate is the controller (Metadata's
// Controller, the same on every node), and its key's create revision is
// its epoch, which only grows. Every controller write is a transaction
// that compares that create revision (controllerWrite): a controller whose
// lease expired, or that was deposed while it paused, writes nothing, as an
// etcd lease alone is not mutual exclusion. A killed controller is
// replaced when its lease runs out (SessionTTL); one that shuts down
// revokes its lease, and the next is elected at once.
//
// The controller's decisions (decideLeaders, a pure function of a
// Metadata) are written by its control loop on every new view: a partition
// whose leader is not eligible (dead, or in controlled shutdown) gets the
// first eligible member of its ISR; the ISR loses members that are not
// eligible while one remains; with none, the partition keeps its ISR and
// has no leader (-1) once its leader is dead, so that the last leader leads
// again when it returns (unless unclean.leader.election.enable lets
// another replica lead). Each change bumps the partition epoch (and the
// leader epoch for a new leader) and compares the partition key's mod
// revision, so a decision made on a stale view writes nothing and is made
// again. Every leader.imbalance.check.interval.seconds it also gives
// partitions back to their preferred leader (decidePreferred).
//
// # Reassignment
//
// A partition reassignment (Kafka's KIP-455) lives in the partition state,
// so it survives any restart of brokers and controller. Starting one to
// target T (AlterReassignments, whichever broker serves the request,
// compare-and-swap on the partition key's mod revision like the other
// registry writes) sets replicas to T followed by the original replicas
// not in T, adding_replicas to T minus the original, removing_replicas to
// the original minus T, and bumps the partition epoch; ISR and leader
// stay. A new target replaces one in flight starting from the original
// replicas (replicas minus adding): adding replicas the new target drops
// leave the ISR, and the leadership if one had it. Cancelling goes back to
// the original replicas, in the order they have in the replica list, the
// adding replicas leaving the ISR (a new leader from the rest if one led).
// Either refuses (INVALID_REPLICA_ASSIGNMENT) to leave an empty ISR
// unless unclean leader election is on. The brokers act on the state
// alone: one added opens the log and fetches from the leader, which
// proposes it for the ISR once caught up (AlterISR); one removed deletes
// its log.
//
// The controller completes a reassignment (decideReassignments, with
// decideLeaders in one pass: one change per partition and view, leaders
// first) once the ISR without the removing replicas holds the whole
// target, as Kafka requires: replicas become the target, the removing
// replicas leave the ISR, adding and removing are cleared; the leader
// stays if it is in the target and eligible, else the first eligible
// target replica leads (leader epoch bump). A reassignment that needs no
// catching up (a new order, a shrink to in-sync replicas) completes in the
// request that starts it. An adding replica is elected leader only once in
// the ISR: decideLeaders elects from the ISR, and its unclean elections
// skip adding replicas.
//
// # ISR
//
// A new partition's ISR is its replicas that are eligible when it is
// created, as Kafka starts one (empty logs agree); its first eligible
// replica leads. Creating a topic thus writes its partitions once, with no
// ISR change per follower afterwards. The leader proposes each ISR change
// (AlterISR) as a compare-and-swap
// on the partition's state: its leader, leader epoch and partition epoch
// must be the ones the proposal was made from, so a deposed leader's
// proposal writes nothing (Kafka's AlterPartition, decided by the registry
// instead of a controller), and the leader's registration must be its live
// session's, so a leader paused past its session timeout writes nothing
// either (Kafka's broker epoch check).
//
// Metadata.ControllerID, what clients are told, is the elected controller,
// or between two terms the lowest live broker: any broker serves the admin
// requests clients send to "the controller", as any Kafka 4 broker
// forwards them.
package cluster
