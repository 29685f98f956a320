// Package deploy holds the tests of what ships: the release build
// (.goreleaser.yaml), the container image (Containerfile), the Helm chart
// (helm/portico), the compose file (compose/compose.yaml) and the systemd
// unit (systemd/portico.service). It has no code of its own.
//
// It is a Go module of its own so that Helm, the Kubernetes API types and
// the compose loader, which only these tests use, stay out of the
// product's go.mod and go.sum (docs/deploy.md, "How this is tested").
// The tests reach the product only through its binary, built by the
// release configuration, as an operator would run it.
package deploy
