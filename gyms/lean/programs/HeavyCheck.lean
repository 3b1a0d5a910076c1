/-
The warm checker of heavygym's Lean gym, for the wasm build of Lean (run with `lean --run`).

It speaks the command subset of the Lean community REPL's protocol
(https://github.com/leanprover-community/repl), so that the gym drives it and a native `repl`
binary alike. A request is one JSON object followed by a blank line:

  {"cmd": "import Init"}                           a new session: the header's imports are loaded
  {"cmd": "theorem t : 1 = 1 := rfl", "env": 0}    commands elaborated in environment 0

and the answer is one JSON object followed by a blank line:

  {"env": 1, "messages": [{"severity": "error", "pos": {"line": 1, "column": 4},
                           "endPos": {"line": 1, "column": 9}, "data": "..."}]}

or {"message": "..."} for a request it cannot serve. End of input ends the program.

One request goes beyond the REPL, because `#print axioms` refuses to run here (this build
imports the exported part of each .olean only, which makes every file a `module`):

  {"axioms": "t", "env": 1}   ->   {"axioms": [{"name": "sorryAx", "imported": true}, ...]}

lists what declaration `t` of environment 1 depends on. Imported theorems and definitions
are listed too (their bodies are not loaded, so they look like axioms); `imported` tells
them apart from axioms that the checked text declared itself.

Differences from the REPL: each request is elaborated with `Lean.Elab.process` against the
environment it names, so `open` and other scoped state do not carry over between requests
(the gym sends them with every check); and only the environments made by headers and by the
last `recentEnvs` requests are kept, so memory stays flat over thousands of checks.

Why it is written the way it is: the npm build ships only the exported part of Lean's
.olean files, so code compiled here cannot call auxiliary declarations that live in the
private parts (`_redArg` variants, private helpers, derived instances): such a definition
fails with "Unknown constant" and everything that uses it with "no executable code". Every
function below sticks to calls whose compiled code is exported, hence the hand-written
recursions over lists and JSON. `String.ofList` crashes this build's interpreter
(`bad_alloc`), so no string is built from characters. Declarations are private in a
`module`, hence `public def main` for `lean --run`.
-/
import Lean.Elab.Frontend
import Lean.Util.CollectAxioms

open Lean Elab

/-- Requests whose environment stays available, beyond those made by headers. -/
def recentEnvs : Nat := 64

structure State where
  envs : List (Nat × Environment) := []
  headers : List Nat := []
  next : Nat := 0

def severity : MessageSeverity → String
  | .information => "info"
  | .warning => "warning"
  | .error => "error"

def position (p : Position) : Json :=
  Json.mkObj [("line", Json.num p.line), ("column", Json.num p.column)]

def messageJson (m : Message) : IO Json := do
  let endPos := match m.endPos with
    | some p => position p
    | none => Json.null
  return Json.mkObj [("severity", Json.str (severity m.severity)), ("pos", position m.pos),
    ("endPos", endPos), ("data", Json.str (← m.data.toString))]

def messagesJson : List Message → IO (List Json)
  | [] => pure []
  | m :: ms => do return (← messageJson m) :: (← messagesJson ms)

def inputContext (input : String) : Parser.InputContext :=
  { inputString := input, fileName := "<input>", fileMap := input.toFileMap }

/-- Elaborate `input` (a header, then commands): load the header's imports first. -/
def runHeader (input : String) : IO (Environment × MessageLog) := do
  let ctx := inputContext input
  let (header, parserState, messages) ← Parser.parseHeader ctx
  -- Only the exported part of each .olean ships with the npm build.
  let env ← importModules (headerToImports ⟨header⟩) {} (loadExts := true) (level := .exported)
  let s ← IO.processCommands ctx parserState (Command.mkState env messages {})
  return (s.commandState.env, s.commandState.messages)

instance : MonadEnv (StateM Environment) where
  getEnv := fun env => ((env, env) : Environment × Environment)
  modifyEnv := fun f env => (((), f env) : Unit × Environment)

/-- In a `module` a plain `theorem t` is private: its name is mangled. -/
def resolve (env : Environment) (n : Name) : Option Name :=
  if env.contains n then some n
  else if env.contains (mkPrivateName env n) then some (mkPrivateName env n)
  else none

def axiomJson (env : Environment) (n : Name) : Json :=
  Json.mkObj [("name", Json.str (n.toString (escape := false))),
    ("imported", Json.bool (env.getModuleIdxFor? n).isSome)]

def axiomsJson (env : Environment) : List Name → List Json
  | [] => []
  | n :: ns => axiomJson env n :: axiomsJson env ns

def axiomsOf (env : Environment) (n : Name) : Json :=
  let axioms := (collectAxioms n : StateM Environment (Array Name)).run' env
  Json.mkObj [("axioms", Json.arr (axiomsJson env axioms.toList).toArray)]

def lookup (envs : List (Nat × Environment)) (id : Nat) : Option Environment :=
  match envs with
  | [] => none
  | (k, env) :: rest => if k = id then some env else lookup rest id

/-- The environments still worth keeping once environment `id` exists. -/
def prune (headers : List Nat) (id : Nat) : List (Nat × Environment) → List (Nat × Environment)
  | [] => []
  | (k, env) :: rest =>
    if k + recentEnvs > id || headers.elem k then (k, env) :: prune headers id rest else prune headers id rest

def remember (st : State) (env : Environment) (isHeader : Bool) : State :=
  let id := st.next
  { envs := (id, env) :: prune st.headers id st.envs,
    headers := if isHeader then id :: st.headers else st.headers,
    next := id + 1 }

def errorJson (text : String) : Json := Json.mkObj [("message", Json.str text)]

def axiomsRequest (st : State) (env? : Option Nat) (name : Name) : Json :=
  match env? with
  | none => errorJson "An axioms request needs \"env\""
  | some id => match lookup st.envs id with
    | none => errorJson "Unknown environment."
    | some env => match resolve env name with
      | none => errorJson s!"Unknown declaration {name.toString (escape := false)}."
      | some n => axiomsOf env n

def handle (st : State) (query : String) : IO (Json × State) := do
  let request := Json.parse query
  let .ok request := request | return (errorJson "Could not parse the request as JSON", st)
  let env? := match request.getObjVal? "env" with
    | .ok (Json.num n) => some n.mantissa.toNat
    | _ => none
  if let .ok (Json.str name) := request.getObjVal? "axioms" then
    return (axiomsRequest st env? name.toName, st)
  let .ok (Json.str cmd) := request.getObjVal? "cmd"
    | return (errorJson "A request needs a string field \"cmd\" (or \"axioms\")", st)
  let result ← try
      match env? with
      | none => pure (some (← runHeader cmd))
      | some id => match lookup st.envs id with
        | some env => pure (some (← Elab.process cmd env {}))
        | none => pure none
    catch e => return (errorJson s!"Lean error: {e}", st)
  let some (env, messages) := result | return (errorJson "Unknown environment.", st)
  let messages ← messagesJson messages.toList
  let answer := Json.mkObj [("env", Json.num st.next), ("messages", Json.arr messages.toArray)]
  return (answer, remember st env env?.isNone)

def whitespace : List Char → Bool
  | [] => true
  | c :: cs => c.isWhitespace && whitespace cs

def blank (line : String) : Bool := whitespace line.toList

/-- Lines up to a blank line (the REPL's framing); "" at end of input. -/
partial def readRequest (stdin : IO.FS.Stream) (acc : String) : IO String := do
  let line ← stdin.getLine
  if line = "" then return acc  -- end of input
  if blank line then
    if blank acc then return (← readRequest stdin acc) else return acc
  readRequest stdin (acc ++ line)

partial def loop (stdin stdout : IO.FS.Stream) (st : State) : IO Unit := do
  let query ← readRequest stdin ""
  if blank query then return
  let (answer, st) ← handle st query
  stdout.putStr (answer.compress ++ "\n\n")
  stdout.flush
  loop stdin stdout st

public def main : IO Unit := do
  searchPathRef.set (← addSearchPathFromEnv {})
  loop (← IO.getStdin) (← IO.getStdout) {}
