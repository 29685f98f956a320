package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// The goldens are written by hand from the Swift SDK's Codable keys
// (declaration order, nil left out). Each must decode to the expected Go
// value and encode back to the same bytes.
func TestJSONGoldens(t *testing.T) {
	cases := []struct {
		file string
		want any
	}{
		{"initparams_full.json", &InitParams{
			ClientID:    "BPi5PB_UiIZ-cPz1GtV5i1I2iOSOHuimiXBI0e-Oe_u6X3oVAbCiAZOTEBtTXw4tsluTITPqA8zMsfxIKMjiqNQ",
			Network:     SapphireMainnet,
			BuildEnv:    Staging,
			SDKURL:      "https://auth.example.com/v6",
			RedirectURL: "com.example.app://auth",
			WhiteLabel: &WhiteLabelData{
				AppName: "Example", LogoLight: "https://example.com/light.png", LogoDark: "https://example.com/dark.png",
				DefaultLanguage: German, Mode: ModeDark, Theme: map[string]string{"primary": "#123456", "secondary": "#abcdef"},
				AppURL: "https://example.com", UseLogoLoader: ptr(true),
			},
			LoginConfig: map[string]LoginConfig{"jwt": {
				Verifier: "example-jwt", TypeOfLogin: TypeJWT, Name: "Example JWT", Description: "Custom login",
				ClientID: "example-client", VerifierSubIdentifier: "sub", LogoHover: "h.png", LogoLight: "l.png", LogoDark: "d.png",
				MainOption: ptr(true), ShowOnModal: ptr(false), ShowOnDesktop: ptr(true), ShowOnMobile: ptr(false),
			}},
			UseCoreKitKey:  ptr(false),
			ChainNamespace: Solana,
			MfaSettings: &MfaSettings{
				DeviceShareFactor:  &MfaSetting{Enable: true, Priority: ptr(1), Mandatory: ptr(true)},
				BackUpShareFactor:  &MfaSetting{Enable: true, Priority: ptr(2), Mandatory: ptr(false)},
				SocialBackupFactor: &MfaSetting{Enable: false},
				PasswordFactor:     &MfaSetting{Enable: true, Priority: ptr(4)},
			},
			SessionTime: 604800,
		}},
		{"initparams_min.json", &InitParams{ClientID: "client", Network: Mainnet}},
		{"whitelabel_defaults.json", ptr(DefaultWhiteLabel())},
		{"loginparams_full.json", &LoginParams{
			LoginProvider: JWT,
			DappShare:     "share words here",
			ExtraLoginOptions: &ExtraLoginOptions{
				Display: "page", Prompt: "login", MaxAge: "3600", UILocales: "en", IDTokenHint: "hint",
				IDToken: "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", LoginHint: "user@example.com", ACRValues: "mfa",
				Scope: "openid email", Audience: "api", Connection: "github", Domain: "https://example.auth0.com",
				ClientID: "idp-client", RedirectURI: "https://example.com/cb", Leeway: ptr(0), VerifierIDField: "sub",
				IsVerifierIDCaseSensitive: ptr(false), AdditionalParams: map[string]string{"foo": "bar", "tenant": "t1"},
			},
			RedirectURL: "http://127.0.0.1:8080/callback",
			AppState:    "state-1",
			MfaLevel:    MFAMandatory,
			Curve:       ED25519,
		}},
		{"loginparams_min.json", &LoginParams{LoginProvider: Google, ExtraLoginOptions: &ExtraLoginOptions{AdditionalParams: map[string]string{}}, Curve: SECP256K1}},
		{"state_full.json", &State{
			PrivKey:        "0baddffe5dd2d0af1cd5e5a7cf0bf3a8b9edf0c6aea15c5bb6ba8e28c6a2f6e4",
			Ed25519PrivKey: "0baddffe5dd2d0af1cd5e5a7cf0bf3a8b9edf0c6aea15c5bb6ba8e28c6a2f6e4b135bdb0a32a5e5fcd8a7cd7f1ab8b9e42d3a7e1b8b0c6a5d4f3e2d1c0b9d271",
			SessionID:      "c1b6a4c3f0b5e0d5e4b3a2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1",
			UserInfo: &UserInfo{
				Name: "Ada Lovelace", ProfileImage: "https://example.com/ada.png", TypeOfLogin: "google",
				AggregateVerifier: "w3a-google", Verifier: "torus", VerifierID: "ada@example.com", Email: "ada@example.com",
				IDToken: "eyJ0eXAi", OAuthIDToken: "eyJhbGci", OAuthAccessToken: "ya29.a0", IsMfaEnabled: ptr(false),
			},
			CoreKitKey:            "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100",
			CoreKitEd25519PrivKey: "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a0908070605040302010011223344556677889900aabbccddeeff00112233445566778899aabbccddeeff00",
		}},
		{"state_error.json", &State{Error: "user closed the popup"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) { checkGolden(t, c.file, c.want) })
	}
}

// checkGolden checks that testdata/file decodes to want (a pointer) and
// that want encodes back to the file's bytes.
func checkGolden(t *testing.T, file string, want any) {
	t.Helper()
	golden, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	got := reflect.New(reflect.TypeOf(want).Elem()).Interface()
	if err := json.Unmarshal(golden, got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
	}
	out, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(out, '\n'), golden) {
		t.Fatalf("encoded\n%s\ngolden\n%s", out, golden)
	}
}

func TestParseInitParams(t *testing.T) {
	if _, err := ParseInitParams([]byte(`{"clientId":"c","network":"mainnet","unknown":1}`)); err != nil {
		t.Fatalf("unknown keys must be ignored: %v", err)
	}
	var fe *FieldError
	if _, err := ParseInitParams([]byte(`{"clientId":"c","network":"mainnet","sessionTime":"long"}`)); !errors.As(err, &fe) || fe.Field != "sessionTime" {
		t.Fatalf("type mismatch: %v", err)
	}
	if _, err := ParseInitParams([]byte(`{"clientId":"c","network":"mainnet","whiteLabel":{"mode":"dim"}}`)); !errors.As(err, &fe) || fe.Field != "whiteLabel.mode" {
		t.Fatalf("bad mode: %v", err)
	}
	if _, err := ParseInitParams([]byte(`{"clientId":"c","network":"mainnet"} {}`)); err == nil {
		t.Fatal("trailing data accepted")
	}
}

func TestResolveEndpoints(t *testing.T) {
	cases := []struct {
		p             InitParams
		server        string
		sdk, sessions string
	}{
		{InitParams{}, "", "https://auth.web3auth.io/v6", DefaultSessionServerURL},
		{InitParams{BuildEnv: Staging}, "", "https://staging-auth.web3auth.io/v6", DefaultSessionServerURL},
		{InitParams{BuildEnv: Testing}, "", "https://develop-auth.web3auth.io", DefaultSessionServerURL},
		{InitParams{BuildEnv: Testing, SDKURL: "http://127.0.0.1:9000/pages/"}, "", "http://127.0.0.1:9000/pages", "http://127.0.0.1:9000/"},
		{InitParams{SDKURL: "https://a.example/v6"}, "https://s.example/v2", "https://a.example/v6", "https://s.example/v2/"},
	}
	for _, c := range cases {
		e := ResolveEndpoints(c.p, c.server)
		if e.SDKURL != c.sdk || e.SessionServerURL != c.sessions {
			t.Errorf("%+v: %+v", c.p, e)
		}
	}
}
