package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

// TestFeatures reads the features from ApiVersions and updates them as
// kafka-features does: Gregor finalizes transaction.version at 2 and
// group.version and share.version at 1, reports the other client-facing features at level 0
// only, and refuses any level but the current one.
func TestFeatures(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	for _, v := range []int16{0, 3, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor-test", "1"
		resp := w.mustRoundTrip(req).(*kmsg.ApiVersionsResponse)
		want, wantFinal := 0, 0
		if v >= 3 {
			want, wantFinal = len(supportedFeatures), 3
		}
		if len(resp.SupportedFeatures) != want || len(resp.FinalizedFeatures) != wantFinal {
			t.Errorf("ApiVersions v%d: supported %+v, finalized %+v; want %d supported, %d finalized",
				v, resp.SupportedFeatures, resp.FinalizedFeatures, want, wantFinal)
		}
		for _, f := range resp.SupportedFeatures {
			wantMax := map[string]int16{"transaction.version": 2, "group.version": 1, "share.version": 1}[f.Name]
			if f.MinVersion != 0 || f.MaxVersion != wantMax {
				t.Errorf("ApiVersions v%d: feature %s supported at %d-%d, want 0-%d", v, f.Name, f.MinVersion, f.MaxVersion, wantMax)
			}
			if f.Name == "metadata.version" || f.Name == "kraft.version" {
				t.Errorf("ApiVersions v%d reports %s", v, f.Name)
			}
		}
		for _, f := range resp.FinalizedFeatures {
			want := map[string]int16{"transaction.version": 2, "group.version": 1, "share.version": 1}[f.Name]
			if want == 0 || f.MinVersionLevel != want || f.MaxVersionLevel != want {
				t.Errorf("ApiVersions v%d: finalized %+v, want transaction.version at 2, group.version and share.version at 1", v, f)
			}
		}
		if v >= 3 && resp.FinalizedFeaturesEpoch < 0 {
			t.Errorf("ApiVersions v%d: finalized features epoch %d", v, resp.FinalizedFeaturesEpoch)
		}
	}

	update := func(v int16, feature string, level int16, upgrade int8) *kmsg.UpdateFeaturesResponse {
		t.Helper()
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.SetVersion(v)
		req.TimeoutMillis = 30000
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType, u.AllowDowngrade = feature, level, upgrade, upgrade > 1
		req.FeatureUpdates = append(req.FeatureUpdates, u)
		return w.mustRoundTrip(req).(*kmsg.UpdateFeaturesResponse)
	}
	for _, v := range []int16{0, 1, 2} {
		for _, c := range []struct {
			feature string
			level   int16
			upgrade int8
			want    protocol.ErrorCode
		}{
			{"group.version", 1, upgradeTypeUpgrade, protocol.None},
			{"group.version", 0, upgradeTypeSafeDowngrade, protocol.InvalidUpdateVersion},
			{"share.version", 1, upgradeTypeUpgrade, protocol.None},
			{"share.version", 0, upgradeTypeSafeDowngrade, protocol.InvalidUpdateVersion},
			{"transaction.version", 2, upgradeTypeUpgrade, protocol.None},
			{"transaction.version", 0, upgradeTypeSafeDowngrade, protocol.InvalidUpdateVersion},
			{"streams.version", 1, upgradeTypeUpgrade, protocol.InvalidUpdateVersion},
			{"metadata.version", 22, upgradeTypeUpgrade, protocol.InvalidUpdateVersion},
			{"no.such.feature", 0, upgradeTypeUpgrade, protocol.InvalidUpdateVersion},
		} {
			resp := update(v, c.feature, c.level, c.upgrade)
			what := fmt.Sprintf("UpdateFeatures v%d %s=%d", v, c.feature, c.level)
			checkCode(t, what, resp.ErrorCode, c.want)
			wantResults := 0
			if v <= 1 && c.want == protocol.None {
				wantResults = 1
			}
			if len(resp.Results) != wantResults {
				t.Errorf("%s: %d results, want %d", what, len(resp.Results), wantResults)
			}
		}
	}
	if resp := update(1, "group.version", 0, 9); resp.ErrorCode != int16(protocol.InvalidUpdateVersion) {
		t.Errorf("UpdateFeatures with upgrade type 9: error %d", resp.ErrorCode)
	}
}
