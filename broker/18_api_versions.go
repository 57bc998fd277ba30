package broker

// ApiVersions (key 18), versions 0-4.
//
// The API ranges come from the handler registry, so only what the broker
// serves is listed. A version above 4 never reaches this handler: the
// connection answers it with a v0 body, UNSUPPORTED_VERSION and the same
// ranges (KIP-511), before parsing the request. v3+ requests carry the
// client's software name and version, which Kafka validates; so do we
// (INVALID_REQUEST for names or versions outside [a-zA-Z0-9._-]).

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

var apiVersionsAPI = handler{key: 18, min: 0, max: 4, handle: (*Broker).handleAPIVersions}

// softwareField is Kafka's pattern for client_software_name and _version.
var softwareField = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (b *Broker) handleAPIVersions(_ context.Context, _ *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ApiVersionsRequest)
	resp := b.apiVersionsResponse()
	if hdr.APIVersion >= 3 && (!softwareField.MatchString(req.ClientSoftwareName) || !softwareField.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = int16(protocol.InvalidRequest)
	}
	return resp, nil
}
