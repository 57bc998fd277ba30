// Package protocol is the part of Kafka's wire protocol that kmsg does not do
// for Gregor: request framing, the request and response headers, the registry
// of served APIs x versions that ApiVersions is built from, and Kafka's error
// codes. kmsg encodes and decodes every request and response body.
//
// # Wire format
//
// All integers are big-endian. A uvarint is the unsigned LEB128 encoding
// Kafka calls UNSIGNED_VARINT: 7 bits a byte, low bits first, high bit set on
// every byte but the last, at most 5 bytes for a 32-bit value.
//
// Every request and every response is one frame:
//
//	size  int32   number of bytes that follow; 1..maxSize (socket.request.max.bytes)
//	body  [size]byte
//
// A request frame's body is a request header followed by the request body.
// The header version depends on the API key and version of the request:
//
//	v0 (ControlledShutdown v0 only)  v1 (request not flexible)  v2 (request flexible, KIP-482)
//	request_api_key     int16        request_api_key  int16      request_api_key  int16
//	request_api_version int16        request_api_version int16   request_api_version int16
//	correlation_id      int32        correlation_id   int32      correlation_id   int32
//	                                 client_id        string16   client_id        string16
//	                                                             tagged_fields
//
// string16 is an int16 length then that many bytes of UTF-8; a negative
// length means null (Kafka reads any negative length of a nullable string as
// null). The client id keeps this two-byte length even in header v2, so that
// a broker of any age can read the header of an ApiVersions request of any
// version. tagged_fields is a uvarint count, then for each field a uvarint
// tag, a uvarint size and size bytes. No header tags are defined; they are
// skipped.
//
// A request is flexible when its API version is at or above the first
// flexible version of its API key (per kmsg, which follows Kafka's message
// definitions); versions above kmsg's maximum follow the same rule, so the
// header of any version can be parsed.
//
// A response frame's body is a response header followed by the response body:
//
//	v0 (response not flexible, and every ApiVersions response)   v1 (response flexible)
//	correlation_id int32                                          correlation_id int32
//	                                                              tagged_fields (one 0 byte: no tags)
//
// ApiVersions responses always use header v0 (KIP-511): a client that sent a
// version the broker does not know must still be able to read the answer.
//
// # Error handling
//
// Nothing in this package panics on input from the network: every length is
// checked against the bytes that remain before it is used, and nothing is
// allocated from a length that has not been checked. Registry.Register
// panics on programmer errors, since registration happens once at startup
// with constants.
package protocol
