/-
The warm checker of heavygym's Lean gym, for the wasm build of Lean (run with `lean --run`).

It checks proofs of statements the gym fixed, and runs none of the proof's code: the proof is
parsed by Lean's own parser as the body of `theorem <statement> := <proof>`, and refused before
anything is elaborated unless it is a single term (a `by` block is a term) that uses none of the
syntax that makes Lean run code or trust it (see `refusedAtoms`, `refusedNames`,
`nodeProblem`).

Protocol. A request is one JSON object followed by a blank line, on stdin; every request
carries an `id` that the reply echoes:

  {"id": "…", "header": "import Init"}
      start the session: load the imports (once per process)
      -> {"id": "…", "messages": [...]}
  {"id": "…", "check": {"before": "open Nat\n", "statement": "theorem t : …", "name": "t",
                        "proof": "by simp"}}
      -> {"id": "…", "refused": "why", "pos": {"line", "column"}}     the proof's syntax
      or {"id": "…", "messages": [...], "axioms": [{"name", "imported"}] | null}
      or {"id": "…", "failed": "…"}     Lean threw while checking the proof

`before` and `statement` come from the task (trusted); `proof` from the model. Positions count
lines of `before ++ statement ++ " :=\n" ++ proof` (1-based lines, 0-based columns). `axioms` is
null when the theorem was not declared; imported theorems are listed too (their bodies are not
loaded in this build, so they look like axioms), and `imported` tells them apart from axioms
declared by the checked text. A request that cannot be served gets {"id": …, "message": "…"}.

Replies do not go to stdout. Each is one line written to `/dev/heavygym-reply`, a device of the
patched glue (gyms/lean/glue.py) that reaches the host's stdout and can be opened once: this
program opens it first, before it reads any request. Its own stdout and stderr are replaced by
streams that drop everything, and the glue sends whatever else the process prints (stdout,
/dev/stdout, /dev/tty, /proc/self/fd/1) to the host's stderr.

Why it is written the way it is: the npm build ships only the exported part of Lean's
.olean files, so code compiled here cannot call auxiliary declarations that live in the
private parts (`_redArg` variants, private helpers, derived instances): such a definition
fails with "Unknown constant" and everything that uses it with "no executable code". Every
function below sticks to calls whose compiled code is exported, hence the hand-written
recursions over lists and JSON. `String.ofList` crashes this build's interpreter
(`bad_alloc`), so no string is built from characters. Declarations are private in a
`module`, hence `public def main` for `lean --run`; and `#print axioms` refuses to run in a
`module`, hence `collectAxioms`.
-/
import Lean.Elab.Frontend
import Lean.Util.CollectAxioms

open Lean Elab

def replyDevice : System.FilePath := "/dev/heavygym-reply"

/-- Keywords a proof never needs: they run code (`run_tac`, `by_elab`, `#eval`…), trust it
(`native_decide`, `unsafe`, `extern`, `implemented_by`), read files (`include_str`), leave a
hole (`sorry`, `admit`), set a whole tactic configuration to a term that Lean would evaluate
(`config`), or attach attributes. Commands cannot occur inside a term; they are listed in
case a term syntax embeds one. -/
def refusedAtoms : List String :=
  ["sorry", "admit", "native_decide", "run_tac", "by_elab", "unsafe", "extern", "implemented_by", "include_str",
   "config", "@[", "#eval", "#eval!", "#exec", "#exit", "#print", "run_cmd", "run_elab", "run_meta",
   "elab", "elab_rules", "macro", "macro_rules", "syntax", "initialize", "builtin_initialize"]

/-- Name components a proof never needs: axioms that trust compiled code or leave holes,
`decide +native`, escapes from the type system, and the `IO` types through which code run at
elaboration time could act. Quoted names («IO») are the same names. -/
def refusedNames : List String :=
  ["sorryAx", "ofReduceBool", "ofReduceNat", "reduceBool", "reduceNat", "trustCompiler", "native",
   "config", "unsafeCast", "unsafeBaseIO", "unsafeIO", "unsafeEIO", "implemented_by", "implementedBy",
   "IO", "EIO", "BaseIO", "RealWorld"]

/-- The options `set_option … in` may set inside a proof (none weakens the kernel check). -/
def allowedOptions : List String :=
  ["maxRecDepth", "maxHeartbeats", "synthInstance.maxHeartbeats", "synthInstance.maxSize"]

def nameRefused : Name → Bool
  | .anonymous => false
  | .str p s => refusedNames.elem s || nameRefused p
  | .num p _ => nameRefused p

/-- A tactic configuration value is evaluated by Lean (`Lean.Elab.Tactic.Config`): only
literals, so that nothing the proof wrote runs. -/
def literal (stx : Syntax) : Bool :=
  match stx with
  | .ident _ _ n _ => n == `true || n == `false
  | _ => stx.isOfKind numLitKind || stx.isOfKind scientificLitKind

def isAtom (val : String) : Syntax → Bool
  | .atom _ v => v == val
  | _ => false

def nodeProblem (stx : Syntax) (kind : SyntaxNodeKind) : Option (Syntax × String) :=
  if kind == `Lean.Parser.Tactic.valConfigItem then
    if literal (stx.getArg 3) then none
    else some (stx, "a tactic option set to something other than a literal (Lean would evaluate it)")
  else if isAtom "set_option" (stx.getArg 0) then
    let opt := (stx.getArg 1).getId.toString
    if allowedOptions.elem opt then none else some (stx, s!"`set_option {opt}`")
  else none

mutual
  partial def forbidden (stx : Syntax) : Option (Syntax × String) :=
    match stx with
    | .missing => none
    | .atom _ val => if refusedAtoms.elem val then some (stx, s!"`{val}`") else none
    | .ident _ _ val _ =>
      if nameRefused val then some (stx, s!"`{val.toString (escape := false)}`") else none
    | .node _ kind args =>
      match nodeProblem stx kind with
      | some found => some found
      | none => firstForbidden args.toList

  partial def firstForbidden : List Syntax → Option (Syntax × String)
    | [] => none
    | s :: rest =>
      match forbidden s with
      | some found => some found
      | none => firstForbidden rest
end

partial def findKind (kind : SyntaxNodeKind) (stx : Syntax) : Option Syntax :=
  match stx with
  | .node _ k args => if k == kind then some stx else findIn kind args.toList
  | _ => none
where
  findIn (kind : SyntaxNodeKind) : List Syntax → Option Syntax
    | [] => none
    | s :: rest => match findKind kind s with
      | some found => some found
      | none => findIn kind rest

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

/-- Load the imports of a header (and elaborate whatever else it holds). -/
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
  match resolve env n with
  | none => Json.null
  | some n =>
    let axioms := (collectAxioms n : StateM Environment (Array Name)).run' env
    Json.arr (axiomsJson env axioms.toList).toArray

def posOf (ctx : Parser.InputContext) (stx : Syntax) : Json :=
  match stx.getPos? with
  | some p => position (ctx.fileMap.toPosition p)
  | none => Json.null

def refusal (pos : Json) (why : String) : List (String × Json) :=
  [("refused", Json.str why), ("pos", pos)]

/-- Whether an optional piece of syntax is absent (holds no token). -/
def absent (stx : Syntax) : Bool :=
  match stx.getPos? with
  | some _ => false
  | none => true

/-- Judge the proof's syntax, then (only if it passes) elaborate the theorem. -/
def check (header : Environment) (before statement name proof : String) : IO (List (String × Json)) := do
  let assign := before.utf8ByteSize + statement.utf8ByteSize + 1  -- where our ` :=` puts `:=`
  let text := before ++ statement ++ " :=\n" ++ proof
  let ctx := inputContext text
  -- The task's own lines before the statement (`open`s, options): trusted, and they can
  -- change how the statement and the proof parse.
  let s ← IO.processCommands (inputContext before) {} (Command.mkState header {} {})
  let pmctx : Parser.ParserModuleContext := match s.commandState.scopes with
    | scope :: _ => { env := s.commandState.env, options := scope.opts,
                      currNamespace := scope.currNamespace, openDecls := scope.openDecls }
    | [] => { env := s.commandState.env, options := {} }
  let (stx, after, parseLog) := Parser.parseCommand ctx pmctx { pos := ⟨before.utf8ByteSize⟩ } {}
  if let _ :: _ := parseLog.toList then
    return [("messages", Json.arr (← messagesJson parseLog.toList).toArray), ("axioms", Json.null)]
  unless after.pos.byteIdx == text.utf8ByteSize do
    return refusal (position (ctx.fileMap.toPosition after.pos))
      "the proof must be one term or `by` block, but Lean's parser found more after it: \
        commands are not accepted"
  let some value := findKind `Lean.Parser.Command.declValSimple stx
    | return refusal Json.null "the proof must follow `:=` as a term or `by` block"
  let starts := match (value.getArg 0).getPos? with
    | some p => p.byteIdx == assign
    | none => false
  unless starts && absent (value.getArg 2) && absent (value.getArg 3) do
    return refusal (posOf ctx value) "the proof must be one term or `by` block, without `termination_by`, `decreasing_by` or `where`"
  if let some (at_, what) := forbidden (value.getArg 1) then
    return refusal (posOf ctx at_) s!"{what} is not allowed in a proof"
  let (env, messages) ← Elab.process text header {}
  return [("messages", Json.arr (← messagesJson messages.toList).toArray), ("axioms", axiomsOf env name.toName)]

def field (obj : Json) (key : String) : Option String :=
  match obj.getObjVal? key with
  | .ok (Json.str s) => some s
  | _ => none

def handle (header? : Option Environment) (query : String) : IO (Json × Option Environment) := do
  let .ok request := Json.parse query
    | return (Json.mkObj [("message", Json.str "Could not parse the request as JSON")], header?)
  let id := match request.getObjVal? "id" with
    | .ok (Json.str s) => Json.str s
    | _ => Json.null
  let answer (fields : List (String × Json)) : Json := Json.mkObj (("id", id) :: fields)
  try
    if let some input := field request "header" then
      if let some _ := header? then
        return (answer [("message", Json.str "The session has started already")], header?)
      let (env, messages) ← runHeader input
      return (answer [("messages", Json.arr (← messagesJson messages.toList).toArray)], some env)
    let .ok job := request.getObjVal? "check"
      | return (answer [("message", Json.str "A request needs \"header\" or \"check\"")], header?)
    let some header := header?
      | return (answer [("message", Json.str "No session: send a header first")], header?)
    match field job "before", field job "statement", field job "name", field job "proof" with
    | some before, some statement, some name, some proof =>
      try
        return (answer (← check header before statement name proof), header?)
      catch e =>  -- the proof made Lean throw: the proof's failure, not the checker's
        return (answer [("failed", Json.str s!"{e}")], header?)
    | _, _, _, _ =>
      return (answer [("message", Json.str "A check needs before, statement, name and proof")], header?)
  catch e =>
    return (answer [("message", Json.str s!"Lean error: {e}")], header?)

def whitespace : List Char → Bool
  | [] => true
  | c :: cs => c.isWhitespace && whitespace cs

def blank (line : String) : Bool := whitespace line.toList

/-- Lines up to a blank line; "" at end of input. -/
partial def readRequest (stdin : IO.FS.Stream) (acc : String) : IO String := do
  let line ← stdin.getLine
  if line = "" then return acc  -- end of input
  if blank line then
    if blank acc then return (← readRequest stdin acc) else return acc
  readRequest stdin (acc ++ line)

partial def loop (stdin : IO.FS.Stream) (reply : IO.FS.Handle) (header? : Option Environment) : IO Unit := do
  let query ← readRequest stdin ""
  if blank query then return
  let (answer, header?) ← handle header? query
  reply.putStr (answer.compress ++ "\n")
  reply.flush
  loop stdin reply header?

/-- Drops everything: what elaboration prints must reach no stream the host reads. -/
def discard : IO.FS.Stream where
  flush := pure ()
  read := fun _ => pure ByteArray.empty
  write := fun _ => pure ()
  getLine := pure ""
  putStr := fun _ => pure ()
  isTty := pure false

public def main : IO Unit := do
  -- First of all: the device opens once, so nothing that runs later can open it again.
  let reply ← IO.FS.Handle.mk replyDevice .append
  try IO.FS.removeFile replyDevice catch _ => pure ()
  let stdin ← IO.getStdin
  let _ ← IO.setStdout discard
  let _ ← IO.setStderr discard
  searchPathRef.set (← addSearchPathFromEnv {})
  loop stdin reply none
