package authwire

// LoginPayload is what a login stores, encrypted, under its loginId on the
// session server for the login pages to read (Swift SdkUrlParams). The SDK
// writes it; the pages read it.
type LoginPayload struct {
	// Options are the SDK's init params.
	Options InitParams `json:"options"`
	// Params are the login params.
	Params LoginParams `json:"params"`
	// ActionType is "login".
	ActionType string `json:"actionType"`
}

// State is the result of a login (Swift Web3AuthState): key material in
// hex and the user. It is the session record the login pages write,
// encrypted to the session key, and the SDK reads. All fields are optional
// on the wire.
type State struct {
	// PrivKey is the app-scoped secp256k1 key.
	PrivKey string `json:"privKey,omitempty"`
	// Ed25519PrivKey is the ed25519 key (seed ‖ public key) of PrivKey.
	Ed25519PrivKey string `json:"ed25519PrivKey,omitempty"`
	// SessionID is the session key, 64 hex characters. Secret.
	SessionID string `json:"sessionId,omitempty"`
	// UserInfo describes the user.
	UserInfo *UserInfo `json:"userInfo,omitempty"`
	// Error is an error reported by the login pages.
	Error string `json:"error,omitempty"`
	// CoreKitKey is the user's base secp256k1 key, the same across apps.
	CoreKitKey string `json:"coreKitKey,omitempty"`
	// CoreKitEd25519PrivKey is the ed25519 key of CoreKitKey.
	CoreKitEd25519PrivKey string `json:"coreKitEd25519PrivKey,omitempty"`

	// The fields below are the v7 mobile state type's fields from the
	// JavaScript session data (OpenloginSessionData). The Go types
	// round-trip them; the login pages fill only what their key network
	// can honestly give: NodeIndexes, Signatures and KeyMode.

	// FactorKey is a core-kit TSS factor key.
	FactorKey string `json:"factorKey,omitempty"`
	// Signatures are the key nodes' signatures for this login, each a JSON
	// string; the pages put the nodes' signed token commitments here.
	Signatures []string `json:"signatures,omitempty"`
	// TSSShareIndex is the index of a TSS share.
	TSSShareIndex *int `json:"tssShareIndex,omitempty"`
	// TSSPubKey is the TSS public key.
	TSSPubKey string `json:"tssPubKey,omitempty"`
	// TSSShare is a TSS share.
	TSSShare string `json:"tssShare,omitempty"`
	// TSSTag is the TSS tag (newer web SDKs).
	TSSTag string `json:"tssTag,omitempty"`
	// TSSNonce is the TSS nonce.
	TSSNonce *int `json:"tssNonce,omitempty"`
	// NodeIndexes are the key nodes whose shares rebuilt the key.
	NodeIndexes []int `json:"nodeIndexes,omitempty"`
	// KeyMode is how the key is held: KeyModeV1, KeyMode1of1 (the key
	// network's key) or KeyMode2ofN (tKey MFA).
	KeyMode KeyMode `json:"keyMode,omitempty"`
}

// KeyMode is the JavaScript session data's key mode.
type KeyMode string

// Key modes.
const (
	// KeyModeV1 is a legacy network's key.
	KeyModeV1 KeyMode = "v1"
	// KeyMode1of1 is a key the key network alone gives.
	KeyMode1of1 KeyMode = "1/1"
	// KeyMode2ofN is a tKey key: the network's share and one more.
	KeyMode2ofN KeyMode = "2/n"
)

// UserInfo describes the logged-in user (Swift Web3AuthUserInfo, v7).
type UserInfo struct {
	// Name is the user's name (optional since 7.4.1).
	Name string `json:"name,omitempty"`
	// ProfileImage is a URL of the user's picture.
	ProfileImage string `json:"profileImage,omitempty"`
	// TypeOfLogin is the login method used (required in a session).
	TypeOfLogin string `json:"typeOfLogin,omitempty"`
	// AggregateVerifier is the aggregate verifier, if one was used.
	AggregateVerifier string `json:"aggregateVerifier,omitempty"`
	// Verifier is the verifier that checked the login.
	Verifier string `json:"verifier,omitempty"`
	// VerifierID is the user's id at the verifier (often an email).
	VerifierID string `json:"verifierId,omitempty"`
	// Email is the user's email.
	Email string `json:"email,omitempty"`
	// DappShare is the MFA device share, saved for the next login.
	DappShare string `json:"dappShare,omitempty"`
	// IDToken is the key network's id token.
	IDToken string `json:"idToken,omitempty"`
	// OAuthIDToken is the identity provider's id token.
	OAuthIDToken string `json:"oAuthIdToken,omitempty"`
	// OAuthAccessToken is the identity provider's access token.
	OAuthAccessToken string `json:"oAuthAccessToken,omitempty"`
	// IsMfaEnabled reports whether the user has MFA set up (new in v7).
	IsMfaEnabled *bool `json:"isMfaEnabled,omitempty"`
}
