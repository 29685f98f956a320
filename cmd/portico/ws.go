package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/coder/websocket"
)

// WSCmd is a small WebSocket client for trying subscriptions from a
// shell: it sends the given messages and prints every message that comes
// back, one a line, so that a subscription fits in one command (the
// README's).
type WSCmd struct {
	URL      string   `arg:"" help:"WebSocket URL: a ready line's ws://…/ws/v3/<API_KEY>."`
	Messages []string `arg:"" optional:"" help:"Messages to send once connected, in order: JSON-RPC calls such as eth_subscribe."`
	Count    int      `help:"Stop after this many messages have come back (answers and notifications); 0 runs until Ctrl-C." default:"0"`
	MaxBytes int64    `help:"Largest message read." default:"16777216"`
}

// Run connects, sends, and prints until Count messages have come back, the
// server closes, or ctx ends (Ctrl-C, which is not an error).
func (c *WSCmd) Run(ctx context.Context, s *Streams) error {
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return fmt.Errorf("ws: %q is not a ws:// or wss:// URL", c.URL)
	}
	if c.Count < 0 {
		return errors.New("ws: --count must not be negative")
	}
	conn, _, err := websocket.Dial(ctx, c.URL, nil)
	if err != nil {
		return fmt.Errorf("ws: %w", err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(c.MaxBytes)
	for _, m := range c.Messages {
		if err := conn.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			return fmt.Errorf("ws: send: %w", err)
		}
	}
	for n := 0; c.Count == 0 || n < c.Count; n++ {
		_, msg, err := conn.Read(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case websocket.CloseStatus(err) == websocket.StatusNormalClosure:
			return nil
		case err != nil:
			return fmt.Errorf("ws: %w", err)
		}
		if _, err := fmt.Fprintf(s.Out, "%s\n", msg); err != nil {
			return err
		}
	}
	return conn.Close(websocket.StatusNormalClosure, "")
}
