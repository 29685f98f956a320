package auth

import "github.com/porticohq/portico/auth/authwire"

// The SDK's types are the wire types of package authwire, which the login
// pages share. The aliases below keep them the SDK's own names: an app
// uses auth.InitParams and never imports authwire. Their JSON, methods
// (Validate, WithDefaults, EffectiveSessionTime) and documentation are
// authwire's.

// InitParams configures an SDK (Swift W3AInitParams, v7); see
// authwire.InitParams.
type InitParams = authwire.InitParams

// WhiteLabelData customizes the login pages (Swift W3AWhiteLabelData, v7);
// see authwire.WhiteLabelData.
type WhiteLabelData = authwire.WhiteLabelData

// MfaSettings enables and orders the MFA factors (new in v7).
type MfaSettings = authwire.MfaSettings

// MfaSetting configures one MFA factor.
type MfaSetting = authwire.MfaSetting

// LoginConfig customizes one login method (Swift W3ALoginConfig).
type LoginConfig = authwire.LoginConfig

// ExtraLoginOptions are passed on to the identity provider.
type ExtraLoginOptions = authwire.ExtraLoginOptions

// LoginParams starts one login (Swift W3ALoginParams, v7).
type LoginParams = authwire.LoginParams

// LoginPayload is what a login stores, encrypted, under its loginId on the
// session server for the login pages to read (Swift SdkUrlParams).
type LoginPayload = authwire.LoginPayload

// State is the result of a login (Swift Web3AuthState): key material in
// hex and the user.
type State = authwire.State

// UserInfo describes the logged-in user (Swift Web3AuthUserInfo, v7).
type UserInfo = authwire.UserInfo

// FieldError reports an invalid value of a named field; Field is a JSON
// path such as "network" or "whiteLabel.mode".
type FieldError = authwire.FieldError

// Session lifetimes, in seconds.
const (
	// DefaultSessionTime is the session lifetime when none is given: a day.
	DefaultSessionTime = authwire.DefaultSessionTime
	// MaxSessionTime is the longest session lifetime: seven days.
	MaxSessionTime = authwire.MaxSessionTime
)

// DefaultPrimaryColor is the login pages' primary colour when the theme
// does not set one.
const DefaultPrimaryColor = authwire.DefaultPrimaryColor

// DefaultWhiteLabel returns white-label data holding the documented
// defaults: English, automatic mode, the default primary colour and no
// logo loader.
func DefaultWhiteLabel() WhiteLabelData { return authwire.DefaultWhiteLabel() }

// MaxAge is extraLoginOptions.max_age: a string or a number on the wire.
type MaxAge = authwire.MaxAge

// KeyMode is how a session's key is held (State.KeyMode).
type KeyMode = authwire.KeyMode

// Key modes of State.KeyMode.
const (
	// KeyModeV1 is a legacy network's key.
	KeyModeV1 = authwire.KeyModeV1
	// KeyMode1of1 is a key the key network alone gives.
	KeyMode1of1 = authwire.KeyMode1of1
	// KeyMode2ofN is a tKey key: the network's share and one more.
	KeyMode2ofN = authwire.KeyMode2ofN
)
