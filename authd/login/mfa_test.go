package login

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/tkey"
)

// startEmail runs a passwordless login up to the first page after the code.
func (e *env) startEmail(t *testing.T, sdk *auth.SDK, email string, params auth.LoginParams) (string, *browser) {
	t.Helper()
	return e.passwordless(t, sdk, email, params)
}

func TestMFALevels(t *testing.T) {
	e := newEnv(t)
	sdk := e.sdk(t, auth.InitParams{})
	cases := []struct {
		level     auth.MFALevel
		email     string
		offer     bool
		skippable bool
	}{
		{auth.MFANone, "none@example.com", false, false},
		{auth.MFAOptional, "optional@example.com", true, true},
		{auth.MFAMandatory, "mandatory@example.com", true, false},
		{auth.MFADefault, "default@example.com", true, true},
		{"", "unset@example.com", true, true},
	}
	for _, c := range cases {
		t.Run(string(c.level), func(t *testing.T) {
			cb, b := e.startEmail(t, sdk, c.email, auth.LoginParams{MfaLevel: c.level})
			offered := cb == "" && strings.Contains(b.Page, `id="enable"`)
			if offered != c.offer {
				t.Fatalf("MFA setup offered = %v, want %v (callback %q)", offered, c.offer, cb)
			}
			if !c.offer {
				complete(t, sdk, cb)
				return
			}
			if skip := strings.Contains(b.Page, `id="skip"`); skip != c.skippable {
				t.Fatalf("skip offered = %v, want %v", skip, c.skippable)
			}
			if c.skippable {
				cb, _ = b.submit("mfa/skip", nil)
				complete(t, sdk, cb)
			} else if cb, _ := b.submit("mfa/skip", nil); cb != "" {
				t.Fatal("a mandatory setup was skipped")
			}
		})
	}
	// default: offered on logins 1, 4, 7, … (login 1 was above).
	for i := 2; i <= 4; i++ {
		cb, b := e.startEmail(t, sdk, "default@example.com", auth.LoginParams{MfaLevel: auth.MFADefault})
		offered := cb == "" && strings.Contains(b.Page, `id="enable"`)
		if offered != (i == 4) {
			t.Fatalf("default, login %d: offered = %v", i, offered)
		}
		if offered {
			cb, _ = b.submit("mfa/skip", nil)
		}
		complete(t, sdk, cb)
	}
}

func TestMFASetupAndRecovery(t *testing.T) {
	e := newEnv(t)
	prio := func(i int) *int { return &i }
	yes := true
	settings := &auth.MfaSettings{
		PasswordFactor:     &auth.MfaSetting{Enable: true, Priority: prio(1), Mandatory: &yes},
		DeviceShareFactor:  &auth.MfaSetting{Enable: true, Priority: prio(2)},
		BackUpShareFactor:  &auth.MfaSetting{Enable: true, Priority: prio(3)},
		SocialBackupFactor: &auth.MfaSetting{Enable: true, Priority: prio(4)},
	}
	// With a loginConfig entry, the SDK keeps the dapp share per verifier
	// and sends it at the next login.
	lc := map[string]auth.LoginConfig{"email_passwordless": {Verifier: PasswordlessVerifier, TypeOfLogin: auth.TypePasswordless, ClientID: "x"}}
	sdk := e.sdk(t, auth.InitParams{MfaSettings: settings, LoginConfig: lc})
	const user = "dave@example.com"

	// Before MFA: the network key is the core kit key.
	cb, _ := e.startEmail(t, sdk, user, auth.LoginParams{MfaLevel: auth.MFANone})
	before := complete(t, sdk, cb)

	cb, b := e.startEmail(t, sdk, user, auth.LoginParams{MfaLevel: auth.MFAMandatory})
	if cb != "" {
		t.Fatal("mandatory MFA not offered")
	}
	// Factors in priority order; the mandatory password is enforced.
	order := []string{tkey.KindPassword, tkey.KindDevice, tkey.KindBackup, tkey.KindSocial}
	last := -1
	for _, k := range order {
		i := strings.Index(b.Page, `id="factor-`+k+`"`)
		if i < last {
			t.Fatalf("factor %s out of priority order", k)
		}
		last = i
	}
	if cb, _ := b.submit("mfa/setup", url.Values{}); cb != "" || !strings.Contains(b.Page, `id="notice"`) {
		t.Fatal("setup without the mandatory password went through")
	}
	if b.submit("mfa/setup", url.Values{"password": {"correct horse"}, "password2": {"correct horsf"}}); !strings.Contains(b.Page, "do not match") {
		t.Fatal("different passwords accepted")
	}
	// Password and a social backup account (its own email login).
	b.submit("mfa/setup", url.Values{"password": {"correct horse"}, "password2": {"correct horse"}, "backupEmail": {"dave.backup@example.com"}})
	if !strings.Contains(b.Page, "dave.backup@example.com") {
		t.Fatalf("no code page for the backup account: %s", b.Page)
	}
	b.submit("social/code", url.Values{"code": {e.Log.lastCode(t, "dave.backup@example.com")}})
	words := phraseRE.FindAllStringSubmatch(b.Page, -1)
	if len(words) != 24 {
		t.Fatalf("recovery phrase: %d words\n%s", len(words), b.Page)
	}
	var phrase []string
	for _, w := range words {
		phrase = append(phrase, w[1])
	}
	cb, _ = b.submit("phrase", nil)
	on := complete(t, sdk, cb)
	if on.UserInfo.IsMfaEnabled == nil || !*on.UserInfo.IsMfaEnabled || !hex64.MatchString(on.UserInfo.DappShare) {
		t.Fatalf("after setup: userInfo %+v", on.UserInfo)
	}
	if on.CoreKitKey == before.CoreKitKey {
		t.Fatal("MFA on, but the key is still the network's")
	}
	// The network alone no longer gives the key.
	nk, _ := eccrypto.ParsePrivateKeyHex(before.CoreKitKey)
	if eccrypto.PrivateKeyHex(nk) == on.CoreKitKey {
		t.Fatal("network key is the final key")
	}

	// The SDK saved the dapp share: the next login goes straight through.
	cb, _ = e.startEmail(t, sdk, user, auth.LoginParams{})
	if st := complete(t, sdk, cb); st.CoreKitKey != on.CoreKitKey || st.UserInfo.DappShare != on.UserInfo.DappShare {
		t.Fatal("login with the device share: another key")
	}

	// Without the device share (another device): every factor recovers
	// the same key and hands the device share back.
	fresh := func() (*auth.SDK, *browser) {
		s := e.sdk(t, auth.InitParams{MfaSettings: settings})
		cb, b := e.startEmail(t, s, user, auth.LoginParams{})
		if cb != "" || !strings.Contains(b.Page, `id="recover-password"`) || !strings.Contains(b.Page, `id="recover-phrase"`) || !strings.Contains(b.Page, `id="recover-social"`) {
			t.Fatalf("recovery page: %q %s", cb, b.Page)
		}
		return s, b
	}
	s, b := fresh()
	if cb, _ := b.submit("mfa/recover", url.Values{"factor": {tkey.KindPassword}, "password": {"wrong password"}}); cb != "" || !strings.Contains(b.Page, "Wrong password") {
		t.Fatal("wrong password accepted")
	}
	cb, _ = b.submit("mfa/recover", url.Values{"factor": {tkey.KindPassword}, "password": {"correct horse"}})
	if st := complete(t, s, cb); st.CoreKitKey != on.CoreKitKey || st.UserInfo.DappShare != on.UserInfo.DappShare {
		t.Fatal("password recovery: another key or device share")
	}
	s, b = fresh()
	cb, _ = b.submit("mfa/recover", url.Values{"factor": {tkey.KindBackup}, "phrase": {strings.Join(phrase, " ")}})
	if st := complete(t, s, cb); st.CoreKitKey != on.CoreKitKey {
		t.Fatal("phrase recovery: another key")
	}
	s, b = fresh()
	b.submit("mfa/recover", url.Values{"factor": {tkey.KindSocial}, "backupEmail": {"dave.backup@example.com"}})
	cb, _ = b.submit("social/code", url.Values{"code": {e.Log.lastCode(t, "dave.backup@example.com")}})
	if cb == "" {
		t.Fatalf("social recovery: %s\n%s", b.Page, e.Log)
	}
	if st := complete(t, s, cb); st.CoreKitKey != on.CoreKitKey {
		t.Fatal("social recovery: another key")
	}
	// A wrong dapp share falls back to the recovery page.
	s = e.sdk(t, auth.InitParams{MfaSettings: settings})
	if cb, b := e.startEmail(t, s, user, auth.LoginParams{DappShare: strings.Repeat("ab", 32)}); cb != "" || !strings.Contains(b.Page, `id="recover-password"`) {
		t.Fatal("a wrong dapp share was accepted")
	}
}

var phraseRE = regexpMust(`<li>([a-z]+)</li>`)

func TestSessionExpiryAndLogout(t *testing.T) {
	e := newEnv(t)
	sdk := e.sdk(t, auth.InitParams{SessionTime: 60})
	cb, _ := e.passwordless(t, sdk, "erin@example.com", auth.LoginParams{MfaLevel: auth.MFANone})
	st := complete(t, sdk, cb)
	key, _ := eccrypto.ParsePrivateKeyHex(st.SessionID)
	if _, err := e.Sessions.Get(context.Background(), key); err != nil {
		t.Fatalf("session record: %v", err)
	}
	e.Clock.Advance(61 * time.Second)
	if _, err := e.Sessions.Get(context.Background(), key); err == nil {
		t.Fatal("the session record outlived sessionTime")
	}
	// A fresh session, then logout: gone.
	e.Clock.Advance(-61 * time.Second)
	cb, _ = e.passwordless(t, sdk, "erin@example.com", auth.LoginParams{MfaLevel: auth.MFANone})
	st = complete(t, sdk, cb)
	key, _ = eccrypto.ParsePrivateKeyHex(st.SessionID)
	if err := sdk.Logout(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(2 * time.Second)
	if _, err := e.Sessions.Get(context.Background(), key); err == nil {
		t.Fatal("the session record survived logout")
	}
}
