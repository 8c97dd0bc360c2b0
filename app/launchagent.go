package app

import (
	"bytes"
	"encoding/xml"
)

// launchAgentLabel names the app's LaunchAgent (macOS).
const launchAgentLabel = "sh.capabilities.desktop"

// launchAgent is the property list of the LaunchAgent that starts the app
// at login on macOS (~/Library/LaunchAgents/sh.capabilities.desktop.plist):
// it runs exe once when the person logs in, and does not restart it after a
// Quit. A hub that is not at the default place is named in the agent's
// environment (CAPABILITIES_HOME=home); home "" is the default.
func launchAgent(exe, home string) []byte {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString("<plist version=\"1.0\">\n<dict>\n")
	b.WriteString("  <key>Label</key>\n  <string>" + launchAgentLabel + "</string>\n")
	b.WriteString("  <key>ProgramArguments</key>\n  <array>\n    <string>")
	_ = xml.EscapeText(&b, []byte(exe))
	b.WriteString("</string>\n  </array>\n")
	if home != "" {
		b.WriteString("  <key>EnvironmentVariables</key>\n  <dict>\n    <key>CAPABILITIES_HOME</key>\n    <string>")
		_ = xml.EscapeText(&b, []byte(home))
		b.WriteString("</string>\n  </dict>\n")
	}
	b.WriteString("  <key>RunAtLoad</key>\n  <true/>\n")
	b.WriteString("  <key>KeepAlive</key>\n  <false/>\n")
	b.WriteString("  <key>ProcessType</key>\n  <string>Interactive</string>\n")
	b.WriteString("</dict>\n</plist>\n")
	return b.Bytes()
}
