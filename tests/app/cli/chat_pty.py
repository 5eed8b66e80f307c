#!/usr/bin/python3
"""`kvforge chat` in a pseudo-terminal, as a person types at it.

Checks what pipes cannot show: libedit's line editing (Left arrow, Up for
history, Ctrl-U), Ctrl-C stopping a reply and returning to the prompt with
the conversation kept, Ctrl-C at the prompt dropping the line, the /commands
(unknown ones answered, never sent to the model), and Ctrl-D quitting with
exit status 0.

usage: chat_pty.py path/to/kvforge work_dir   (the standard library only)
"""
import json
import os
import pty
import select
import subprocess
import sys
import time

kv, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
os.chdir(work)


def fail(msg, out=b""):
    sys.stderr.write(out.decode(errors="replace")[-3000:])
    sys.stderr.write(f"\nFAIL (chat_pty): {msg}\n")
    sys.exit(1)


# A tiny model with a long context: a reply of -n -1 with --ignore-eos runs for
# seconds, long enough to interrupt.
subprocess.run([kv, "make-model", "-o", "long.gguf", "--preset", "tiny", "--n-ctx", "65536"],
               check=True, stderr=subprocess.DEVNULL)

pid, fd = pty.fork()
if pid == 0:
    os.execv(kv, [kv, "chat", "-m", "long.gguf", "-n", "-1", "--ignore-eos", "--temp", "1",
                  "-t", "2", "-c", "65536"])

out = b""  # everything the terminal showed


def read_for(seconds):
    global out
    end = time.time() + seconds
    while time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            out += chunk


def wait_for(text, seconds=20):
    """Reads until `text` appears after the current end of `out`; returns the new output."""
    start = len(out)
    end = time.time() + seconds
    while time.time() < end:
        read_for(0.1)
        if text.encode() in out[start:]:
            return out[start:]
    fail(f"timed out waiting for {text!r}", out)


def send(data):
    os.write(fd, data.encode() if isinstance(data, str) else data)


def alive():
    return os.waitpid(pid, os.WNOHANG) == (0, 0)


wait_for("> ")
# 1. A reply that would run for thousands of tokens, stopped by Ctrl-C once it streams.
send("Tell me a long story\r")
start = len(out)
end = time.time() + 20
while len(out) - start < 200 and time.time() < end:
    read_for(0.1)
send(b"\x03")
wait_for("stays in the conversation", 20)
read_for(0.3)
if not out.endswith(b"> "):
    fail("no prompt after Ctrl-C stopped the reply", out)
if not alive():
    fail("Ctrl-C during a reply ended the program", out)

# 2. Ctrl-C at the prompt drops the line and prompts again.
send("half a line")
read_for(0.3)
send(b"\x03")
wait_for("> ", 10)
if not alive():
    fail("Ctrl-C at the prompt ended the program", out)

# 3. Line editing: "/hlp", Left twice, "e" -> "/help" (raw escape codes would make an unknown
# command).
send("/hlp\x1b[D\x1b[De\r")
wait_for("/save FILE", 10)
# 4. History: Up recalls the earlier line; Ctrl-U clears it again.
start = len(out)
send(b"\x1b[A")
read_for(0.5)
if b"/help" not in out[start:]:
    fail("Up did not recall the previous line", out)
send(b"\x15")
read_for(0.2)
# 5. Unknown commands are answered, not sent to the model.
send("/frobnicate\r")
wait_for("unknown command /frobnicate", 10)
# 6. The stopped reply stayed in the conversation.
send("/save conv.json\r")
wait_for("saved 2 messages", 10)
messages = json.load(open("conv.json"))
if [m["role"] for m in messages] != ["user", "assistant"] or not messages[1]["content"]:
    fail(f"conversation after Ctrl-C: {messages}", out)
if messages[0]["content"] != "Tell me a long story":
    fail(f"the user turn was {messages[0]['content']!r}", out)
# 7. /reset and /load.
send("/reset\r")
wait_for("conversation cleared", 10)
send("/load conv.json\r")
wait_for("loaded 2 messages", 10)
send("/load missing.json\r")
wait_for("not loaded", 10)
# 8. Ctrl-D quits cleanly.
send(b"\x04")
end = time.time() + 10
status = None
while time.time() < end:
    read_for(0.1)
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
else:
    os.kill(pid, 9)
    fail("Ctrl-D did not quit", out)
if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
    fail(f"chat exited with status {status}", out)
print("chat pty: ok")
