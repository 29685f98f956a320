package authwire

import "fmt"

// FieldError reports an invalid value of a named field. Field is a JSON
// path such as "network", "whiteLabel.mode" or "loginConfig.google.clientId".
// Its message starts with "auth:", as every error of the SDK does: the SDK
// returns it from its own checks too (as auth.FieldError).
type FieldError struct {
	// Field is the JSON path of the bad field.
	Field string
	// Value is the rejected value, for enums and numbers; it is left empty
	// for secrets.
	Value string
	// Reason says what is wrong.
	Reason string
}

// Error names the field and the reason.
func (e *FieldError) Error() string {
	if e.Value != "" {
		return fmt.Sprintf("auth: %s: %q %s", e.Field, e.Value, e.Reason)
	}
	return fmt.Sprintf("auth: %s: %s", e.Field, e.Reason)
}
