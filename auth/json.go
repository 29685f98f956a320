package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// decodeJSON decodes one JSON value into v and rejects trailing data. A
// type mismatch becomes a *FieldError naming the field.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return &FieldError{Field: te.Field, Reason: "must be " + jsonKind(te.Type.Kind().String()) + ", not " + te.Value}
		}
		return fmt.Errorf("auth: bad JSON: %w", err)
	}
	if dec.More() {
		return errors.New("auth: bad JSON: data after the value")
	}
	return nil
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	default:
		return "a number"
	}
}
