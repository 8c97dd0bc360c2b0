// Package guest holds the guest prelude: the JavaScript evaluated in every
// fresh sandbox runtime before the model's code.
//
// The prelude removes the engine's globals that reach outside a run (std, os,
// bjson, real timers, gc, …), makes eval and every Function constructor throw,
// and installs the sandbox globals: one frozen object per source namespace
// (a proxy whose tools are read from the host with __cap_host("tools", ns)
// the first time the code uses the namespace, so a runtime costs the same
// however many tools the hub has; unknown tools throw a TypeError naming the
// closest ones), hub.search and
// hub.describe, ToolError, console within the log budget, Date and
// performance on the run's logical clock, Math.random and crypto from the
// run's seed, setTimeout up to 30 s, structuredClone, TextEncoder,
// TextDecoder, atob and btoa.
//
// The prelude talks to the host through one function, __cap_host(op, payload),
// which it captures and deletes from the global object before any model code
// runs. It evaluates to {namespaces, setup, start, deliver}; engine/sandbox
// keeps these as values and never exposes them to the model's code.
package guest

import _ "embed"

// Prelude is the JavaScript source of the guest prelude.
//
//go:embed prelude.js
var Prelude string

// HostFunction is the global name under which the driver installs the host
// function before evaluating Prelude.
const HostFunction = "__cap_host"
