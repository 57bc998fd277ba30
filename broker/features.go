package broker

// Features (KIP-584): the feature levels ApiVersions reports (v3+) and
// UpdateFeatures (key 57, versions 0-2).
//
// A feature level tells clients what they may use: a producer uses the
// second transaction protocol at transaction.version 2, a consumer the
// consumer group protocol at group.version 1, share groups at
// share.version 1, and so on. Gregor serves
// transaction.version 2 (KIP-890 part 2: partition leaders add partitions
// to a transaction on a producer's behalf, TxnOffsetCommit v5 adds the
// group's offsets partition, and every EndTxn v5 bumps the producer
// epoch) and finalizes it at 2, as Apache Kafka 4.x finalizes a new
// cluster; clients that do not know version 2 keep the first protocol,
// which is still served. The other client-facing features are reported
// supported at level 0 only and are not finalized (a feature at level 0
// is not listed, as Kafka does not list it): clients stay on the
// protocols Gregor serves. It does not report metadata.version or
// kraft.version: those describe KRaft's metadata log and quorum, which
// Gregor does not have (its metadata is in etcd), and a level would claim
// the behaviour Kafka ties to it. UpdateFeatures accepts a feature's
// current level (nothing changes) and refuses any other level, or a
// feature not listed, with INVALID_UPDATE_VERSION for the whole request,
// as Kafka refuses a level its controller does not support: the levels
// are fixed by the binary, not stored in the cluster metadata. Before any
// of that, UpdateFeatures needs ALTER on the cluster; without it the whole
// request is CLUSTER_AUTHORIZATION_FAILED, with no per-feature results, as
// Kafka's controller answers.
//
// Known limit: every broker of a cluster reports the same finalized levels
// because they come from the binary. A cluster running brokers of an
// older Gregor (one without transaction.version 2) beside newer ones
// during an upgrade would have clients using version 2 against leaders
// that only verify; upgrade such clusters with transactional producers
// stopped.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

var updateFeaturesAPI = handler{key: 57, min: 0, max: 2, handle: (*Broker).handleUpdateFeatures}

// feature is one feature Gregor reports: the levels it supports and the
// level finalized for every broker (0: not finalized, not listed).
type feature struct {
	name        string
	min, max    int16
	finalizedTo int16
}

// supportedFeatures are the features Gregor reports.
var supportedFeatures = []feature{
	{name: "eligible.leader.replicas.version"},
	{name: "group.version", max: 1, finalizedTo: 1},
	{name: "share.version", max: 1, finalizedTo: 1},
	{name: "streams.version"},
	{name: "transaction.version", max: 2, finalizedTo: 2},
}

// finalizedFeaturesEpoch versions the finalized levels for clients, which
// keep the view with the highest epoch. The levels change only with the
// binary, so the epoch is fixed.
const finalizedFeaturesEpoch = 1

// Feature upgrade types (UpdateFeatures v1+).
const (
	upgradeTypeUpgrade         = 1
	upgradeTypeSafeDowngrade   = 2
	upgradeTypeUnsafeDowngrade = 3
)

// addFeatures adds the supported and finalized features to an ApiVersions
// response.
func addFeatures(resp *kmsg.ApiVersionsResponse) {
	resp.FinalizedFeaturesEpoch = -1
	for _, f := range supportedFeatures {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.name, f.min, f.max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		if f.finalizedTo > 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.name, f.finalizedTo, f.finalizedTo
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
			resp.FinalizedFeaturesEpoch = finalizedFeaturesEpoch
		}
	}
}

func (b *Broker) handleUpdateFeatures(_ context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	if !c.authorizedCluster(acl.OpAlter) {
		resp.ErrorCode, resp.ErrorMessage = notAuthorized(acl.OpAlter)
		return resp, nil
	}
	for _, u := range req.FeatureUpdates {
		if msg := checkFeatureUpdate(hdr.APIVersion, u); msg != "" {
			msg = "The update failed for all features, because of this one: " + msg
			resp.ErrorCode, resp.ErrorMessage = int16(protocol.InvalidUpdateVersion), &msg
			return resp, nil
		}
	}
	if hdr.APIVersion <= 1 {
		// Only these versions carry a result per feature.
		for _, u := range req.FeatureUpdates {
			res := kmsg.NewUpdateFeaturesResponseResult()
			res.Feature = u.Feature
			resp.Results = append(resp.Results, res)
		}
	}
	return resp, nil
}

// checkFeatureUpdate returns what is wrong with one update, "" when it is
// valid (level 0: nothing to change).
func checkFeatureUpdate(version int16, u kmsg.UpdateFeaturesRequestFeatureUpdate) string {
	upgrade := u.UpgradeType
	if version == 0 {
		upgrade = upgradeTypeUpgrade
		if u.AllowDowngrade {
			upgrade = upgradeTypeSafeDowngrade
		}
	}
	var f *feature
	for i := range supportedFeatures {
		if supportedFeatures[i].name == u.Feature {
			f = &supportedFeatures[i]
		}
	}
	switch {
	case f == nil:
		return fmt.Sprintf("Gregor does not support feature %s (level %d asked for).", u.Feature, u.MaxVersionLevel)
	case upgrade < upgradeTypeUpgrade || upgrade > upgradeTypeUnsafeDowngrade:
		return fmt.Sprintf("Upgrade type %d (feature %s) is not one of 1 (upgrade), 2 (safe downgrade) and 3 (unsafe downgrade).", upgrade, u.Feature)
	case u.MaxVersionLevel != f.finalizedTo:
		return fmt.Sprintf("Gregor keeps feature %s at level %d (its levels come with the binary); level %d cannot be set.",
			u.Feature, f.finalizedTo, u.MaxVersionLevel)
	}
	return ""
}
