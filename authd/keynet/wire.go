package keynet

import (
	"encoding/json"
	"fmt"

	"github.com/porticohq/portico/auth/eccrypto"
)

// JSON-RPC method names.
const (
	MethodCommitment  = "CommitmentRequest"
	MethodGetShare    = "GetShareOrKeyAssign"
	MethodDKGDeal     = "DKGDeal"
	MethodSetMetadata = "SetMetadata"
	MethodGetMetadata = "GetMetadata"
)

// MessagePrefix starts every commitment a node signs.
const MessagePrefix = "mug00"

// fieldSep separates the fields of signed commitment data (ASCII FS).
const fieldSep = "\x1c"

// rpcRequest is a JSON-RPC 2.0 request, as the client sends it.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// rpcResponse is a JSON-RPC 2.0 response, as the client reads it.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error a node returns.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Error gives the code and message.
func (e *RPCError) Error() string { return fmt.Sprintf("keynet: node error %d: %s", e.Code, e.Message) }

// ErrorCode is the JSON-RPC code.
func (e *RPCError) ErrorCode() int { return e.Code }

// JSON-RPC error codes of the nodes.
const (
	CodeParse          = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	// CodeBadToken: the id token was refused.
	CodeBadToken = -32001
	// CodeBadCommitment: the node signatures do not commit to this token.
	CodeBadCommitment = -32002
	// CodeTokenReused: the id token was already served.
	CodeTokenReused = -32003
	// CodeKeyAssign: the key could not be assigned (DKG failed).
	CodeKeyAssign = -32004
	// CodeBadSignature: a signed message does not verify.
	CodeBadSignature = -32005
	// CodeStale: metadata not newer than the stored version.
	CodeStale = -32006
	// CodeNotFound: no such metadata.
	CodeNotFound = -32007
)

// CommitmentParams are the params of CommitmentRequest.
type CommitmentParams struct {
	MessagePrefix      string `json:"messageprefix"`
	TokenCommitment    string `json:"tokencommitment"`
	TempPubX           string `json:"temppubx"`
	TempPubY           string `json:"temppuby"`
	VerifierIdentifier string `json:"verifieridentifier"`
}

// CommitmentAnswer is a node's signed commitment.
type CommitmentAnswer struct {
	// Data is MessagePrefix, tokencommitment, temppubx, temppuby,
	// timestamp (Unix seconds) and verifieridentifier joined by ASCII FS.
	Data      string             `json:"data"`
	Signature eccrypto.Signature `json:"signature"`
	NodePubX  string             `json:"nodepubx"`
	NodePubY  string             `json:"nodepuby"`
	NodeIndex int                `json:"node_index"`
}

// ShareItem is one login in GetShareOrKeyAssign.
type ShareItem struct {
	VerifierIdentifier string             `json:"verifieridentifier"`
	VerifierID         string             `json:"verifier_id"`
	IDToken            string             `json:"idtoken"`
	NodeSignatures     []CommitmentAnswer `json:"nodesignatures"`
	TempPubX           string             `json:"temppubx"`
	TempPubY           string             `json:"temppuby"`
}

// ShareParams are the params of GetShareOrKeyAssign.
type ShareParams struct {
	Encrypted  string      `json:"encrypted"`
	UseTemp    bool        `json:"use_temp"`
	OneKeyFlow bool        `json:"one_key_flow"`
	Item       []ShareItem `json:"item"`
}

// PublicKeyXY is a public key as hex coordinates.
type PublicKeyXY struct {
	X string `json:"X"`
	Y string `json:"Y"`
}

// ShareKey is one node's answer for one key.
type ShareKey struct {
	NodeIndex  int         `json:"node_index"`
	Verifier   string      `json:"verifier"`
	VerifierID string      `json:"verifier_id"`
	PublicKey  PublicKeyXY `json:"public_key"`
	// Commitments is the public polynomial, compressed hex points.
	Commitments []string `json:"commitments"`
	// Share is the node's share (64 hex characters) ECIES-encrypted to
	// the temporary key.
	Share eccrypto.Encrypted `json:"share"`
}

// ShareResult is the result of GetShareOrKeyAssign.
type ShareResult struct {
	Keys []ShareKey `json:"keys"`
}

// DealParams is one DKG deal from a dealer to one node.
type DealParams struct {
	Network     string             `json:"network"`
	Verifier    string             `json:"verifier"`
	VerifierID  string             `json:"verifier_id"`
	Dealer      int                `json:"dealer"`
	Recipient   int                `json:"recipient"`
	Commitments []string           `json:"commitments"`
	Share       eccrypto.Encrypted `json:"share"`
	Signature   eccrypto.Signature `json:"signature"`
}

// signedBytes is what the dealer signs: everything but the signature.
func (d *DealParams) signedBytes() []byte {
	c := *d
	c.Signature = eccrypto.Signature{}
	b, _ := json.Marshal(struct {
		Network, Verifier, VerifierID string
		Dealer, Recipient             int
		Commitments                   []string
		Share                         string
	}{c.Network, c.Verifier, c.VerifierID, c.Dealer, c.Recipient, c.Commitments, c.Share.String()})
	return b
}

// MetadataParams are the params of SetMetadata (all fields) and
// GetMetadata (Owner only).
type MetadataParams struct {
	// Owner is the user's network public key, compressed hex.
	Owner   string `json:"owner"`
	Version int64  `json:"version,omitempty"`
	Data    string `json:"data,omitempty"`
	// Signature is the owner's signature over MetadataSigningBytes.
	Signature *eccrypto.Signature `json:"signature,omitempty"`
}

// MetadataSigningBytes is what the owner signs to set metadata: the
// network, the version and the data, so a signed blob cannot be replayed
// on another network or as another version.
func MetadataSigningBytes(network string, version int64, data string) []byte {
	return fmt.Appendf(nil, "portico-tkey-metadata%s%s%s%d%s%s", fieldSep, network, fieldSep, version, fieldSep, data)
}
