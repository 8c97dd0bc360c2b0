package index

// The hand-written tables of the action-class signal (actions.go). Words
// are written plainly; they are stemmed (Snowball) when the package loads,
// so "forgets" and "forgetting" match "forget". A phrase is a few words
// separated by spaces, matched on consecutive words of the query.

// queryActions are the words and phrases by which a person says what they
// want done. The first one a query holds (phrases before single words at
// the same place) gives the query its class; when it holds none, a
// question word (queryQuestions) makes it a read.
var queryActions = map[action][]string{
	actDelete: {
		"delete", "remove", "forget", "wipe", "erase", "drop", "destroy", "purge", "clear", "trash",
		"nuke", "ditch", "discard", "scrap", "cancel", "archive", "get rid of", "clean up", "throw away", "uninstall",
		"unset", "expire", "evict", "flush",
	},
	actRun: {
		"run", "rerun", "re run", "retry", "trigger", "kick off", "launch", "execute", "restart", "rebuild",
		"redeploy", "deploy", "invoke", "fire off", "start", "try again", "replay", "roll back", "rollback",
	},
	actRead: {
		"show", "see", "view", "display", "get", "fetch", "read", "retrieve", "open up", "check", "tell me",
		"look up", "look at", "lookup", "download", "inspect", "describe", "explain", "watch", "print",
		"count", "how many", "how much", "how long", "how far", "how tall", "how big", "grab", "pull up",
	},
	actList: {
		"list", "find", "search", "browse", "look for", "query", "enumerate", "filter",
	},
	actCreate: {
		"create", "add", "make", "open", "note", "remember", "save", "store", "record", "write",
		"register", "set up", "insert", "upload", "draft", "fork", "copy", "schedule", "invite",
		"report", "file", "log", "cache", "generate", "compose", "clone", "link",
	},
	actUpdate: {
		"update", "edit", "change", "modify", "rename", "set", "mark", "move", "assign", "bring up to date",
		"up to date", "sync", "rebase", "close", "reopen", "resolve", "unarchive", "label", "tag",
		"silence", "mute", "unmute", "snooze", "pause", "star", "unstar", "merge", "combine", "transfer",
		"hand over", "bump", "raise", "lower", "replace", "toggle", "enable", "disable", "turn on",
		"turn off", "pin", "unpin", "upgrade", "fix", "correct", "adjust", "promote", "reassign",
		"subscribe", "unsubscribe", "approve", "dismiss", "rotate", "sign out", "log out",
	},
	actSend: {
		"send", "tell", "message", "notify", "ping", "post", "reply", "answer", "dm", "email", "announce",
		"broadcast", "share",
	},
}

// queryQuestions make a query a read when it holds no action word: what
// is asked about is to be read.
var queryQuestions = []string{
	"what", "who", "which", "whose", "why", "where", "when", "how", "is", "are", "does", "did", "do",
	"has", "have", "was", "were", "any",
}

// toolActions are the verbs of tool names ("linearGetIssue",
// "apiPatchPage", "deleteObservations"). A tool takes the first its name
// holds, checked against its annotations (actions.go).
var toolActions = map[action][]string{
	actDelete: {
		"delete", "remove", "drop", "destroy", "erase", "purge", "clear", "trash", "cancel", "unset",
		"evict", "flush", "del", "archive",
	},
	actRun: {
		"run", "rerun", "retry", "trigger", "execute", "exec", "evaluate", "eval", "start", "restart",
		"invoke", "dispatch", "deploy", "rollback", "replay",
	},
	actRead: {
		"get", "read", "retrieve", "fetch", "show", "view", "describe", "download", "export", "explain",
		"count", "whoami", "inspect", "check", "stats", "status", "analyze", "open", "print", "echo",
	},
	actList: {
		"list", "search", "find", "query", "aggregate", "lookup", "browse", "filter", "scan",
	},
	actCreate: {
		"create", "add", "insert", "new", "post", "write", "push", "fork", "upload", "generate", "make",
		"schedule", "submit", "request", "copy", "save", "store", "record", "register", "invite",
		"clone", "connect",
	},
	actUpdate: {
		"update", "edit", "set", "patch", "modify", "rename", "move", "assign", "unassign", "mark",
		"label", "merge", "transfer", "reprioritize", "toggle", "resolve", "unresolve", "complete",
		"convert", "star", "unstar", "subscribe", "unsubscribe", "mute", "unmute", "manage", "dismiss",
		"put", "unarchive", "rotate", "replace", "change", "close", "reopen", "duplicate", "enable",
		"disable", "approve", "logout", "disconnect",
	},
	actSend: {
		"send", "reply", "notify", "message", "email", "publish",
	},
}

// sendNouns turn a tool that creates into one that sends: "postMessage",
// "addReply".
var sendNouns = []string{"message", "messages", "reply", "chat", "email", "notification"}

// queryFillers are openings that say nothing of the action: they are
// skipped before the query's first word is read ("can you delete …",
// "how do I rename …").
var queryFillers = []string{
	"can you", "could you", "would you", "please", "i want to", "i need to", "i would like to",
	"i'd like to", "help me", "how do i", "how can i", "how to", "let's", "lets", "go ahead and",
	"just", "quickly",
}

// queryNotActions are phrases that begin with an action word and say no
// action: arithmetic is computed, not created ("add two numbers").
var queryNotActions = []string{
	"add up", "add two", "add three", "add these", "add the numbers", "add numbers", "add together",
}
