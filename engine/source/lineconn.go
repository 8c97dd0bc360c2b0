package source

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineTransport connects the MCP client to a stdio upstream: each protocol
// line protocolReader passes is one JSON-RPC message (or a batch of them),
// decoded as it is read. go-sdk's IOTransport ran the same lines through a
// streaming JSON decoder of its own, in a goroutine of its own: every
// answer crossed one more goroutine, and a 30 MB result was buffered twice
// more (about 380 MB allocated).
type lineTransport struct {
	r *protocolReader
	w io.WriteCloser
}

func (t lineTransport) Connect(context.Context) (mcp.Connection, error) {
	return &lineConn{r: t.r, w: t.w}, nil
}

// lineConn is the connection lineTransport makes. Reads are serialized by
// go-sdk; Close unblocks one waiting on the upstream (closing its stdout).
type lineConn struct {
	r     *protocolReader
	w     io.WriteCloser
	queue []jsonrpc.Message // the rest of a batch

	writeMu   sync.Mutex
	closeOnce sync.Once
	closeErr  error
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	line, err := c.r.next()
	if err != nil {
		return nil, err
	}
	if len(line) > MaxMessageBytes {
		return nil, fmt.Errorf("reading the upstream: a message of %d bytes, over the limit of %d (64 MB)", len(line), MaxMessageBytes)
	}
	if line[0] != '[' {
		m, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return nil, fmt.Errorf("reading the upstream: %w", err)
		}
		return m, nil
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
		return nil, fmt.Errorf("reading the upstream: a batch that is not a non-empty array of messages")
	}
	msgs := make([]jsonrpc.Message, len(batch))
	for i, raw := range batch {
		if msgs[i], err = jsonrpc.DecodeMessage(raw); err != nil {
			return nil, fmt.Errorf("reading the upstream: message %d of a batch: %w", i+1, err)
		}
	}
	c.queue = msgs[1:]
	return msgs[0], nil
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message to the upstream: %w", err)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err = c.w.Write(append(data, '\n'))
	return err
}

// Close closes both ends of the upstream's stdio, as IOTransport did.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		rerr := c.r.Close()
		werr := c.w.Close()
		if rerr != nil {
			c.closeErr = rerr
		} else {
			c.closeErr = werr
		}
	})
	return c.closeErr
}

func (c *lineConn) SessionID() string { return "" }
