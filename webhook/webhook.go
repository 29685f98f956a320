// Package webhook delivers a key's webhooks (issue 38).
package webhook
