// Package faultproxy is the tests' one fault-injection TCP proxy: it sits
// between a client and a server (Redis, PostgreSQL, MariaDB, anything over
// TCP) and, switched at run time from the test, delays each direction,
// blackholes traffic (connections stay open, nothing is forwarded, no RST:
// a network partition), resets every connection (RST both ways), or drops
// exactly the reply to one command (a reply lost after the server acted).
//
//	p := faultproxy.Start(t, redisAddr, faultproxy.RESP())
//	client := redis.NewClient(&redis.Options{Addr: p.Addr()})
//	p.DropReplyTo(1)   // the server runs the next command; its reply is lost
//	p.Blackhole(true)  // partition
//	p.Blackhole(false) // heal: held bytes flow again
//
// Every method is safe for concurrent use, also while traffic flows.
//
// How "drop the reply" is told apart from other replies depends on the
// protocol. With RESP() (Redis), the proxy parses both directions: each
// command the clients send gets a sequence number, counted across all
// connections, and each reply is matched to its command by order on its
// connection (RESP3 push messages are not replies). DropReplyTo(n)
// swallows the reply to the n-th command from now. For other protocols
// (the PostgreSQL and MySQL wire protocols), DropAfterWrite(n) uses a
// simpler rule: after the n-th client->server write (one read of the
// client's bytes, which for pgx and go-sql-driver/mysql is one statement)
// the proxy forwards nothing more from the server on that connection. In
// both cases the connection then stays open but mute server->client, as
// after a lost packet on a link that then died; the server has received
// and run the command.
package faultproxy

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Option configures a Proxy.
type Option func(*Proxy)

// RESP makes the proxy parse the Redis protocol, for DropReplyTo and
// Commands.
func RESP() Option { return func(p *Proxy) { p.resp = true } }

// Proxy is a TCP proxy with faults. The zero value is not usable; use New
// or Start.
type Proxy struct {
	target string
	ln     net.Listener
	resp   bool

	mu        sync.Mutex
	conns     map[*conn]struct{}
	up, down  time.Duration // delays: client->server, server->client
	blackhole bool
	changed   chan struct{} // closed and replaced on every state change
	closed    bool

	commands   atomic.Int64 // RESP commands seen, across connections
	dropReply  atomic.Int64 // sequence number of the command whose reply to drop; 0 none
	writes     atomic.Int64 // client->server writes seen
	dropAfter  atomic.Int64 // write number after which the server is muted; 0 none
	accepted   atomic.Int64
	droppedRep atomic.Int64

	wg sync.WaitGroup
}

// New starts a proxy listening on a free port of 127.0.0.1 and forwarding
// to target. Close stops it.
func New(target string, opts ...Option) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[*conn]struct{}{}, changed: make(chan struct{})}
	for _, o := range opts {
		o(p)
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Start is New for a test: it fails the test on error and closes the proxy
// when the test ends.
func Start(t testing.TB, target string, opts ...Option) *Proxy {
	t.Helper()
	p, err := New(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// Addr returns the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDelay delays every chunk of bytes client->server by up and
// server->client by down, from when the proxy read it (so throughput is
// kept and order too). 0 forwards at once.
func (p *Proxy) SetDelay(up, down time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up, p.down = up, down
	p.notify()
}

// Blackhole with on stops forwarding in both directions: connections, new
// ones included, stay open and the bytes wait in the proxy and the
// kernel's buffers, as in a network partition (no RST, no FIN). Without
// on, they flow again.
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackhole = on
	p.notify()
}

// Reset closes every open connection with an RST on both sides. New
// connections are accepted as usual.
func (p *Proxy) Reset() {
	p.mu.Lock()
	cs := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	for _, c := range cs {
		c.close(true)
	}
}

// DropReplyTo swallows the reply to the n-th RESP command sent from now on
// (n >= 1, counted across connections) and mutes that connection
// server->client from then on. It needs RESP().
func (p *Proxy) DropReplyTo(n int) {
	if !p.resp {
		panic("faultproxy: DropReplyTo needs the RESP() option")
	}
	p.dropReply.Store(p.commands.Load() + int64(n))
}

// DropAfterWrite mutes server->client, on the connection that carries it,
// everything after the n-th client->server write from now on (n >= 1,
// counted across connections): the server gets the write and acts on it,
// the client never hears back.
func (p *Proxy) DropAfterWrite(n int) { p.dropAfter.Store(p.writes.Load() + int64(n)) }

// Writes returns how many client->server writes the proxy has forwarded,
// across connections: DropAfterWrite counts in the same unit.
func (p *Proxy) Writes() int64 { return p.writes.Load() }

// Commands returns how many RESP commands clients have sent through the
// proxy.
func (p *Proxy) Commands() int64 { return p.commands.Load() }

// Accepted returns how many connections the proxy has accepted.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// DroppedReplies returns how many replies DropReplyTo has swallowed.
func (p *Proxy) DroppedReplies() int64 { return p.droppedRep.Load() }

// Heal turns every fault off: no delay, no blackhole, no pending drop.
func (p *Proxy) Heal() {
	p.dropReply.Store(0)
	p.dropAfter.Store(0)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up, p.down, p.blackhole = 0, 0, false
	p.notify()
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.notify()
	cs := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range cs {
		c.close(false)
	}
	p.wg.Wait()
	return err
}

// notify wakes everything waiting for a state change; p.mu is held.
func (p *Proxy) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// open waits until the proxy is not blackholed and returns the delay of
// the direction, or false when c closed first.
func (p *Proxy) open(c *conn, upward bool) (time.Duration, bool) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return 0, false
		}
		if !p.blackhole {
			d := p.down
			if upward {
				d = p.up
			}
			p.mu.Unlock()
			return d, true
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-c.done:
			return 0, false
		}
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		cc, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		c := &conn{p: p, client: cc, done: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = cc.Close()
			return
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go c.run()
	}
}

// conn is one proxied connection.
type conn struct {
	p      *Proxy
	client net.Conn
	server net.Conn // set once dialled; guarded by mu
	done   chan struct{}

	mu      sync.Mutex
	pending []int64 // RESP: sequence numbers of commands awaiting replies
	mute    atomic.Bool
	once    sync.Once
}

func (c *conn) close(rst bool) {
	c.once.Do(func() {
		close(c.done)
		c.mu.Lock()
		s := c.server
		c.mu.Unlock()
		for _, x := range []net.Conn{c.client, s} {
			if x == nil {
				continue
			}
			if tc, ok := x.(*net.TCPConn); ok && rst {
				_ = tc.SetLinger(0)
			}
			_ = x.Close()
		}
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	})
}

func (c *conn) run() {
	defer c.p.wg.Done()
	// A partition holds new connections too: dial only once it heals.
	if _, ok := c.p.open(c, true); !ok {
		c.close(false)
		return
	}
	s, err := net.DialTimeout("tcp", c.p.target, 5*time.Second)
	if err != nil {
		c.close(true) // the server is down: the client sees a reset
		return
	}
	c.mu.Lock()
	c.server = s
	c.mu.Unlock()
	select {
	case <-c.done: // closed while dialling
		_ = s.Close()
		return
	default:
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.pump(c.client, s, true) }()
	go func() { defer wg.Done(); c.pump(s, c.client, false) }()
	wg.Wait()
}

// chunk is bytes read at a time, to write after the delay.
type chunk struct {
	b  []byte
	at time.Time
}

// pump copies src to dst through the faults until either side closes,
// then closes the connection.
func (c *conn) pump(src, dst net.Conn, upward bool) {
	defer c.close(false)
	q := make(chan chunk, 1024)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for ch := range q {
			if d := time.Until(ch.at); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-c.done:
					t.Stop()
					return
				}
			}
			if _, ok := c.p.open(c, upward); !ok { // held during a partition
				return
			}
			if _, err := dst.Write(ch.b); err != nil {
				c.close(false)
				return
			}
		}
	}()
	defer func() { close(q); <-writerDone }()
	buf := make([]byte, 32<<10)
	var acc []byte // RESP bytes not yet a whole value
	for {
		n, err := src.Read(buf)
		if n > 0 {
			delay, ok := c.p.open(c, upward)
			if !ok {
				return
			}
			data := append([]byte(nil), buf[:n]...)
			var out []byte
			if c.p.resp {
				acc = append(acc, data...)
				out, acc = c.resp(acc, upward)
			} else {
				out = c.raw(data, upward)
			}
			if len(out) > 0 {
				select {
				case q <- chunk{out, time.Now().Add(delay)}:
				case <-c.done:
					return
				}
			}
		}
		if err != nil { // EOF or a closed connection: close both sides
			return
		}
	}
}

// raw applies DropAfterWrite to one chunk and returns what to forward.
func (c *conn) raw(data []byte, upward bool) []byte {
	if upward {
		w := c.p.writes.Add(1)
		if w == c.p.dropAfter.Load() {
			c.p.dropAfter.Store(0)
			c.mute.Store(true) // after this write: nothing back
		}
		return data
	}
	if c.mute.Load() {
		return nil
	}
	return data
}

// resp splits acc into whole RESP values, numbers the commands (upward) or
// matches and filters the replies (downward), and returns the bytes to
// forward and the rest, still incomplete.
func (c *conn) resp(acc []byte, upward bool) (out, rest []byte) {
	for {
		n := respLen(acc)
		if n == -2 { // not RESP after all: forward as is
			if !upward && c.mute.Load() {
				return out, nil
			}
			return append(out, acc...), nil
		}
		if n < 0 {
			return out, acc
		}
		v := acc[:n]
		acc = acc[n:]
		if upward {
			seq := c.p.commands.Add(1)
			c.mu.Lock()
			c.pending = append(c.pending, seq)
			c.mu.Unlock()
			out = append(out, v...)
			continue
		}
		if v[0] == '>' { // a RESP3 push, not a reply
			if !c.mute.Load() {
				out = append(out, v...)
			}
			continue
		}
		c.mu.Lock()
		var seq int64
		if len(c.pending) > 0 {
			seq, c.pending = c.pending[0], c.pending[1:]
		}
		c.mu.Unlock()
		if seq != 0 && seq == c.p.dropReply.Load() {
			c.p.dropReply.Store(0)
			c.p.droppedRep.Add(1)
			c.mute.Store(true)
		}
		if !c.mute.Load() {
			out = append(out, v...)
		}
	}
}
