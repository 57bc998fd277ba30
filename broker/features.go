package broker

// Features (KIP-584): the feature levels ApiVersions reports (v3+) and
// UpdateFeatures (key 57, versions 0-2).
//
// A feature level tells clients what they may use: a producer uses the
// second transaction protocol at transaction.version 2, a consumer the
// consumer group protocol at group.version 1, and so on. Gregor implements
// none of these, so it reports each such feature supported at level 0
// only, and finalizes none (a feature at level 0 is not listed, as Kafka
// does not list it): clients stay on the protocols Gregor serves. It does
// not report metadata.version or kraft.version: those describe KRaft's
// metadata log and quorum, which Gregor does not have (its metadata is in
// etcd), and a level would claim the behaviour Kafka ties to it.
// UpdateFeatures accepts level 0 (nothing changes) and refuses any other
// level, or a feature not listed, with INVALID_UPDATE_VERSION for the
// whole request, as Kafka refuses a level its controller does not
// support.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

var updateFeaturesAPI = handler{key: 57, min: 0, max: 2, handle: (*Broker).handleUpdateFeatures}

// supportedFeatures are the features Gregor reports, each at level 0 only.
var supportedFeatures = []string{
	"eligible.leader.replicas.version",
	"group.version",
	"share.version",
	"streams.version",
	"transaction.version",
}

// Feature upgrade types (UpdateFeatures v1+).
const (
	upgradeTypeUpgrade         = 1
	upgradeTypeSafeDowngrade   = 2
	upgradeTypeUnsafeDowngrade = 3
)

// addFeatures adds the supported features to an ApiVersions response.
func addFeatures(resp *kmsg.ApiVersionsResponse) {
	for _, name := range supportedFeatures {
		f := kmsg.NewApiVersionsResponseSupportedFeature()
		f.Name, f.MinVersion, f.MaxVersion = name, 0, 0
		resp.SupportedFeatures = append(resp.SupportedFeatures, f)
	}
	resp.FinalizedFeaturesEpoch = -1 // nothing is finalized
}

func (b *Broker) handleUpdateFeatures(_ context.Context, _ *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
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
	supported := false
	for _, name := range supportedFeatures {
		supported = supported || name == u.Feature
	}
	switch {
	case !supported:
		return fmt.Sprintf("Gregor does not support feature %s (level %d asked for).", u.Feature, u.MaxVersionLevel)
	case upgrade < upgradeTypeUpgrade || upgrade > upgradeTypeUnsafeDowngrade:
		return fmt.Sprintf("Upgrade type %d (feature %s) is not one of 1 (upgrade), 2 (safe downgrade) and 3 (unsafe downgrade).", upgrade, u.Feature)
	case u.MaxVersionLevel != 0:
		return fmt.Sprintf("Gregor supports feature %s at level 0 only, not %d.", u.Feature, u.MaxVersionLevel)
	}
	return ""
}
