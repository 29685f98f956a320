package authwire

// The types below encode to the same JSON as the Swift SDK's Codable
// types: the same keys, in the Swift declaration order, and absent
// optionals left out. Go zero values stand for Swift nil where the zero is not itself a
// meaningful value (an empty string, an empty enum); optional booleans and
// numbers are pointers so that false and 0 still travel. Maps use omitzero,
// so nil is left out but an empty map is written as {}.

// InitParams configures an SDK (Swift W3AInitParams, v7).
type InitParams struct {
	// ClientID is the project's client id (required).
	ClientID string `json:"clientId"`
	// Network is the key network the client id is registered on (required).
	Network Network `json:"network"`
	// BuildEnv picks the login pages' environment; empty means Production.
	BuildEnv BuildEnv `json:"buildEnv,omitempty"`
	// SDKURL overrides the login pages' base URL that BuildEnv would give.
	SDKURL string `json:"sdkUrl,omitempty"`
	// RedirectURL is where the login pages send the browser back to. The
	// SDK's Login always uses its loopback listener; its LoginURL uses this
	// one.
	RedirectURL string `json:"redirectUrl,omitempty"`
	// LoginConfig customizes login methods, keyed by TypeOfLogin raw value.
	LoginConfig map[string]LoginConfig `json:"loginConfig,omitzero"`
	// WhiteLabel customizes the login pages.
	WhiteLabel *WhiteLabelData `json:"whiteLabel,omitempty"`
	// ChainNamespace is the chain family the keys are for.
	ChainNamespace ChainNamespace `json:"chainNamespace,omitempty"`
	// UseCoreKitKey makes the SDK's PrivKey and Ed25519PrivKey return the core kit
	// keys (the same keys the single-factor SDKs give) instead of the
	// app-scoped ones.
	UseCoreKitKey *bool `json:"useCoreKitKey,omitempty"`
	// MfaSettings orders and enables the MFA factors (new in v7).
	MfaSettings *MfaSettings `json:"mfaSettings,omitempty"`
	// SessionTime is the session lifetime in seconds (new in v7); 0 means
	// DefaultSessionTime, and at most MaxSessionTime is allowed.
	SessionTime int `json:"sessionTime,omitempty"`
}

// Session lifetimes, in seconds.
const (
	// DefaultSessionTime is the session lifetime when none is given: a day.
	DefaultSessionTime = 86400
	// MaxSessionTime is the longest session lifetime: seven days.
	MaxSessionTime = 7 * 86400
)

// WhiteLabelData customizes the login pages (Swift W3AWhiteLabelData, v7).
// Unset fields take the defaults of DefaultWhiteLabel.
type WhiteLabelData struct {
	// AppName is shown in the login screens; default: the app's URL.
	AppName string `json:"appName,omitempty"`
	// LogoLight is the logo for dark backgrounds.
	LogoLight string `json:"logoLight,omitempty"`
	// LogoDark is the logo for light backgrounds.
	LogoDark string `json:"logoDark,omitempty"`
	// DefaultLanguage is the pages' language; default English.
	DefaultLanguage Language `json:"defaultLanguage,omitempty"`
	// Mode is the colour mode; default ModeAuto.
	Mode ThemeModes `json:"mode,omitempty"`
	// Theme sets colours; the key "primary" sets the primary colour
	// (default DefaultPrimaryColor).
	Theme map[string]string `json:"theme,omitzero"`
	// AppURL is shown in the login screens; default: the app's URL.
	AppURL string `json:"appUrl,omitempty"`
	// UseLogoLoader shows the logo while loading; default false.
	UseLogoLoader *bool `json:"useLogoLoader,omitempty"`
}

// DefaultPrimaryColor is the login pages' primary colour when the theme
// does not set one.
const DefaultPrimaryColor = "#0364FF"

// DefaultWhiteLabel returns white-label data holding the documented
// defaults: English, automatic mode, the default primary colour and no
// logo loader. AppName and AppURL default to the app's URL, which only the
// login pages know, so they stay empty.
func DefaultWhiteLabel() WhiteLabelData {
	f := false
	return WhiteLabelData{
		DefaultLanguage: English,
		Mode:            ModeAuto,
		Theme:           map[string]string{"primary": DefaultPrimaryColor},
		UseLogoLoader:   &f,
	}
}

// WithDefaults returns w with every unset field that has a documented
// default filled in.
func (w WhiteLabelData) WithDefaults() WhiteLabelData {
	d := DefaultWhiteLabel()
	if w.DefaultLanguage == "" {
		w.DefaultLanguage = d.DefaultLanguage
	}
	if w.Mode == "" {
		w.Mode = d.Mode
	}
	if w.UseLogoLoader == nil {
		w.UseLogoLoader = d.UseLogoLoader
	}
	if _, ok := w.Theme["primary"]; !ok {
		theme := make(map[string]string, len(w.Theme)+1)
		for k, v := range w.Theme {
			theme[k] = v
		}
		theme["primary"] = DefaultPrimaryColor
		w.Theme = theme
	}
	return w
}

// MfaSettings enables and orders the MFA factors (new in v7).
type MfaSettings struct {
	// DeviceShareFactor is the share kept on the device.
	DeviceShareFactor *MfaSetting `json:"deviceShareFactor,omitempty"`
	// BackUpShareFactor is the backup (seed phrase) share.
	BackUpShareFactor *MfaSetting `json:"backUpShareFactor,omitempty"`
	// SocialBackupFactor is a second social login.
	SocialBackupFactor *MfaSetting `json:"socialBackupFactor,omitempty"`
	// PasswordFactor is a password share.
	PasswordFactor *MfaSetting `json:"passwordFactor,omitempty"`
}

// MfaSetting configures one MFA factor.
type MfaSetting struct {
	// Enable turns the factor on or off (required).
	Enable bool `json:"enable"`
	// Priority orders the factor among the others.
	Priority *int `json:"priority,omitempty"`
	// Mandatory makes the factor required (true) or optional (false).
	Mandatory *bool `json:"mandatory,omitempty"`
}

// LoginConfig customizes one login method (Swift W3ALoginConfig).
type LoginConfig struct {
	// Verifier is the verifier name registered for this method (required).
	Verifier string `json:"verifier"`
	// TypeOfLogin is the method (required).
	TypeOfLogin TypeOfLogin `json:"typeOfLogin"`
	// Name is the method's display name.
	Name string `json:"name,omitempty"`
	// Description is shown in the login modal.
	Description string `json:"description,omitempty"`
	// ClientID is the identity provider's client id (required since 7.1.0).
	ClientID string `json:"clientId"`
	// VerifierSubIdentifier names a sub-verifier of an aggregate verifier.
	VerifierSubIdentifier string `json:"verifierSubIdentifier,omitempty"`
	// LogoHover, LogoLight and LogoDark are the method's logos.
	LogoHover string `json:"logoHover,omitempty"`
	// LogoLight is the method's logo for dark backgrounds.
	LogoLight string `json:"logoLight,omitempty"`
	// LogoDark is the method's logo for light backgrounds.
	LogoDark string `json:"logoDark,omitempty"`
	// MainOption shows the method as a main option.
	MainOption *bool `json:"mainOption,omitempty"`
	// ShowOnModal shows the method in the modal.
	ShowOnModal *bool `json:"showOnModal,omitempty"`
	// ShowOnDesktop shows the method on desktop browsers.
	ShowOnDesktop *bool `json:"showOnDesktop,omitempty"`
	// ShowOnMobile shows the method on mobile browsers.
	ShowOnMobile *bool `json:"showOnMobile,omitempty"`
}

// ExtraLoginOptions are passed on to the identity provider. The JSON keys
// are the OpenID Connect / Auth0 parameter names.
type ExtraLoginOptions struct {
	// Display is the OIDC display parameter.
	Display string `json:"display,omitempty"`
	// Prompt is the OIDC prompt parameter.
	Prompt string `json:"prompt,omitempty"`
	// MaxAge is the OIDC max_age parameter: a string, as the Swift SDK
	// sends it, or a number, as the JavaScript SDK's type allows.
	MaxAge MaxAge `json:"max_age,omitempty"`
	// UILocales is the OIDC ui_locales parameter.
	UILocales string `json:"ui_locales,omitempty"`
	// IDTokenHint is the OIDC id_token_hint parameter.
	IDTokenHint string `json:"id_token_hint,omitempty"`
	// IDToken is an id token for custom JWT logins.
	IDToken string `json:"id_token,omitempty"`
	// LoginHint is the OIDC login_hint parameter (an email for passwordless).
	LoginHint string `json:"login_hint,omitempty"`
	// ACRValues is the OIDC acr_values parameter.
	ACRValues string `json:"acr_values,omitempty"`
	// Scope is the OAuth scope.
	Scope string `json:"scope,omitempty"`
	// Audience is the OAuth audience.
	Audience string `json:"audience,omitempty"`
	// Connection is the Auth0 connection.
	Connection string `json:"connection,omitempty"`
	// Domain is the identity provider's account domain (any string for
	// custom JWT logins).
	Domain string `json:"domain,omitempty"`
	// ClientID is the identity provider's client id (the SDK client id for
	// custom JWT logins).
	ClientID string `json:"client_id,omitempty"`
	// RedirectURI is where the identity provider sends its result.
	RedirectURI string `json:"redirect_uri,omitempty"`
	// Leeway is the allowed clock skew, in seconds, for JWT expiry.
	Leeway *int `json:"leeway,omitempty"`
	// VerifierIDField is the JWT claim that holds the verifier id.
	VerifierIDField string `json:"verifierIdField,omitempty"`
	// IsVerifierIDCaseSensitive says whether the verifier id is case
	// sensitive; the pages treat unset as true.
	IsVerifierIDCaseSensitive *bool `json:"isVerifierIdCaseSensitive,omitempty"`
	// AdditionalParams are further provider parameters (new in v7).
	AdditionalParams map[string]string `json:"additionalParams,omitzero"`
}

// LoginParams starts one login (Swift W3ALoginParams, v7).
type LoginParams struct {
	// LoginProvider is the method to log in with (required).
	LoginProvider Provider `json:"loginProvider"`
	// DappShare is the device share of an MFA user; the SDK's Login fills in the
	// saved one when InitParams.LoginConfig is set.
	DappShare string `json:"dappShare,omitempty"`
	// ExtraLoginOptions are passed to the identity provider.
	ExtraLoginOptions *ExtraLoginOptions `json:"extraLoginOptions,omitempty"`
	// RedirectURL is set by the SDK's Login to its loopback callback; with LoginURL
	// it defaults to InitParams.RedirectURL.
	RedirectURL string `json:"redirectUrl,omitempty"`
	// AppState is returned unchanged in the callback.
	AppState string `json:"appState,omitempty"`
	// MfaLevel says when to ask for MFA.
	MfaLevel MFALevel `json:"mfaLevel,omitempty"`
	// Curve is the curve of the public key put in the id token; the SDK's Login sends
	// SECP256K1 when it is empty, as the Swift SDK always sends one.
	Curve Curve `json:"curve,omitempty"`
}
