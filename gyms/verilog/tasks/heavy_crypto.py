"""Heavy suite: cipher and hash round datapaths (a SHA-256 compression core, an XTEA block cipher)."""

from __future__ import annotations

import random
from collections.abc import Iterator

from gyms.verilog.spec import DesignTask, In, Inputs, Out, Outputs, Reset

M32 = 0xFFFFFFFF

# -- SHA-256 ----------------------------------------------------------------------------------

SHA_IV = (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19)
SHA_K = (
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4, 0xAB1C5ED5,
    0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE, 0x9BDC06A7, 0xC19BF174,
    0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F, 0x4A7484AA, 0x5CB0A9DC, 0x76F988DA,
    0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7, 0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967,
    0x27B70A85, 0x2E1B2138, 0x4D2C6DFC, 0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85,
    0xA2BFE8A1, 0xA81A664B, 0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070,
    0x19A4C116, 0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7, 0xC67178F2,
)  # fmt: skip


def _rotr(x: int, n: int) -> int:
    return ((x >> n) | (x << (32 - n))) & M32


class Sha256Core:
    def __init__(self) -> None:
        self._init()

    def _init(self) -> None:
        self.h = list(SHA_IV)
        self.busy, self.count, self.round = 0, 0, 0
        self.w = [0] * 16
        self.s = [0] * 8

    def step(self, i: Inputs) -> Outputs:
        if i["rst"] or i["init"]:
            self._init()
        elif self.busy:
            a, b, c, d, e, f, g, h = self.s
            w = self.w
            t1 = (h + (_rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)) + ((e & f) ^ (~e & g)) + SHA_K[self.round] + w[0]) & M32
            t2 = ((_rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) & M32
            self.s = [(t1 + t2) & M32, a, b, c, (d + t1) & M32, e, f, g]
            s0 = _rotr(w[1], 7) ^ _rotr(w[1], 18) ^ (w[1] >> 3)
            s1 = _rotr(w[14], 17) ^ _rotr(w[14], 19) ^ (w[14] >> 10)
            self.w = w[1:] + [(s1 + w[9] + s0 + w[0]) & M32]
            if self.round == 63:
                self.h = [(x + y) & M32 for x, y in zip(self.h, self.s)]
                self.busy, self.count = 0, 0
            else:
                self.round += 1
        elif i["word_valid"]:
            self.w[self.count] = i["word"]
            if self.count == 15:
                self.busy, self.round, self.s = 1, 0, list(self.h)
            else:
                self.count += 1
        return {"busy": self.busy, "h_out": self.h[i["h_sel"]], "words": self.count}


def _sha_stimulus(rng: random.Random) -> Iterator[Inputs]:
    """Chains of 1-20 blocks after an init, words offered with gaps and also while busy (ignored),
    a rare init in the middle of a block, the digest read word by word."""
    sel = 0
    while True:
        yield {"init": 1, "word_valid": 0, "word": 0, "h_sel": sel}
        for _ in range(rng.randint(1, 20)):
            density = rng.choice((1.0, 0.7, 0.3))
            for _ in range(rng.randint(16, 120)):
                sel = (sel + 1) % 8 if rng.random() < 0.7 else rng.randrange(8)
                word = rng.getrandbits(32) if rng.random() < 0.9 else rng.choice((0, M32, 0x80000000))
                yield {"init": int(rng.random() < 0.0005), "word_valid": int(rng.random() < density),
                       "word": word, "h_sel": sel}  # fmt: skip


SHA_SPEC = """\
A SHA-256 compression core (FIPS 180-4) that computes one round per clock cycle. It keeps the
chaining value H0..H7 (initially the SHA-256 initial hash value 6a09e667, bb67ae85, 3c6ef372,
a54ff53a, 510e527f, 9b05688c, 1f83d9ab, 5be0cd19) and hashes 16-word message blocks given to it
one 32-bit word per cycle (no padding is done: the words are the block as is, word 0 first).

At each rising edge:
  - if `rst` (synchronous, active high) or `init` is 1: H takes the initial value, the core is
    idle and its word count is 0 (an unfinished block is abandoned);
  - else, when busy, it performs round t (t = 0..63) on the working variables a..h with
    message schedule word W_t and constant K_t, exactly as FIPS 180-4 specifies; after round 63
    it adds a..h into H0..H7, becomes idle and sets its word count to 0; words offered while
    busy are ignored;
  - else (idle), if `word_valid` is 1: `word` is stored as message word number `words`; if that
    was word 15 the core becomes busy with round 0 next and a..h = H0..H7, else `words`
    increments.
So a block's 16th word is accepted at edge k, rounds 0..63 happen at edges k+1 .. k+64, and the
new H is visible after edge k+64, where `busy` drops.
Outputs: `busy`; `words` (4 bits: the word count, which stays 15 while busy);
`h_out` = H[`h_sel`] (combinational, H0 for `h_sel` = 0).
"""

SHA_REFERENCE = """\
module TopModule (
  input clk,
  input rst,
  input init,
  input word_valid,
  input [31:0] word,
  input [2:0] h_sel,
  output reg busy,
  output [31:0] h_out,
  output reg [3:0] words
);
  reg [31:0] H [0:7];
  reg [31:0] W [0:15];
  reg [31:0] a, b, c, d, e, f, g, h;
  reg [5:0] t;
  reg [31:0] k_t;

  always @* begin
    case (t)
      6'd0: k_t = 32'h428a2f98; 6'd1: k_t = 32'h71374491; 6'd2: k_t = 32'hb5c0fbcf; 6'd3: k_t = 32'he9b5dba5;
      6'd4: k_t = 32'h3956c25b; 6'd5: k_t = 32'h59f111f1; 6'd6: k_t = 32'h923f82a4; 6'd7: k_t = 32'hab1c5ed5;
      6'd8: k_t = 32'hd807aa98; 6'd9: k_t = 32'h12835b01; 6'd10: k_t = 32'h243185be; 6'd11: k_t = 32'h550c7dc3;
      6'd12: k_t = 32'h72be5d74; 6'd13: k_t = 32'h80deb1fe; 6'd14: k_t = 32'h9bdc06a7; 6'd15: k_t = 32'hc19bf174;
      6'd16: k_t = 32'he49b69c1; 6'd17: k_t = 32'hefbe4786; 6'd18: k_t = 32'h0fc19dc6; 6'd19: k_t = 32'h240ca1cc;
      6'd20: k_t = 32'h2de92c6f; 6'd21: k_t = 32'h4a7484aa; 6'd22: k_t = 32'h5cb0a9dc; 6'd23: k_t = 32'h76f988da;
      6'd24: k_t = 32'h983e5152; 6'd25: k_t = 32'ha831c66d; 6'd26: k_t = 32'hb00327c8; 6'd27: k_t = 32'hbf597fc7;
      6'd28: k_t = 32'hc6e00bf3; 6'd29: k_t = 32'hd5a79147; 6'd30: k_t = 32'h06ca6351; 6'd31: k_t = 32'h14292967;
      6'd32: k_t = 32'h27b70a85; 6'd33: k_t = 32'h2e1b2138; 6'd34: k_t = 32'h4d2c6dfc; 6'd35: k_t = 32'h53380d13;
      6'd36: k_t = 32'h650a7354; 6'd37: k_t = 32'h766a0abb; 6'd38: k_t = 32'h81c2c92e; 6'd39: k_t = 32'h92722c85;
      6'd40: k_t = 32'ha2bfe8a1; 6'd41: k_t = 32'ha81a664b; 6'd42: k_t = 32'hc24b8b70; 6'd43: k_t = 32'hc76c51a3;
      6'd44: k_t = 32'hd192e819; 6'd45: k_t = 32'hd6990624; 6'd46: k_t = 32'hf40e3585; 6'd47: k_t = 32'h106aa070;
      6'd48: k_t = 32'h19a4c116; 6'd49: k_t = 32'h1e376c08; 6'd50: k_t = 32'h2748774c; 6'd51: k_t = 32'h34b0bcb5;
      6'd52: k_t = 32'h391c0cb3; 6'd53: k_t = 32'h4ed8aa4a; 6'd54: k_t = 32'h5b9cca4f; 6'd55: k_t = 32'h682e6ff3;
      6'd56: k_t = 32'h748f82ee; 6'd57: k_t = 32'h78a5636f; 6'd58: k_t = 32'h84c87814; 6'd59: k_t = 32'h8cc70208;
      6'd60: k_t = 32'h90befffa; 6'd61: k_t = 32'ha4506ceb; 6'd62: k_t = 32'hbef9a3f7; default: k_t = 32'hc67178f2;
    endcase
  end

  wire [31:0] S1 = {e[5:0], e[31:6]} ^ {e[10:0], e[31:11]} ^ {e[24:0], e[31:25]};
  wire [31:0] ch = (e & f) ^ (~e & g);
  wire [31:0] t1 = h + S1 + ch + k_t + W[0];
  wire [31:0] S0 = {a[1:0], a[31:2]} ^ {a[12:0], a[31:13]} ^ {a[21:0], a[31:22]};
  wire [31:0] maj = (a & b) ^ (a & c) ^ (b & c);
  wire [31:0] t2 = S0 + maj;
  wire [31:0] s0 = {W[1][6:0], W[1][31:7]} ^ {W[1][17:0], W[1][31:18]} ^ (W[1] >> 3);
  wire [31:0] s1 = {W[14][16:0], W[14][31:17]} ^ {W[14][18:0], W[14][31:19]} ^ (W[14] >> 10);
  wire [31:0] w_next = s1 + W[9] + s0 + W[0];
  assign h_out = H[h_sel];

  integer k;
  always @(posedge clk) begin
    if (rst || init) begin
      H[0] <= 32'h6a09e667; H[1] <= 32'hbb67ae85; H[2] <= 32'h3c6ef372; H[3] <= 32'ha54ff53a;
      H[4] <= 32'h510e527f; H[5] <= 32'h9b05688c; H[6] <= 32'h1f83d9ab; H[7] <= 32'h5be0cd19;
      busy <= 1'b0;
      words <= 4'd0;
      t <= 6'd0;
    end else if (busy) begin
      a <= t1 + t2; b <= a; c <= b; d <= c;
      e <= d + t1; f <= e; g <= f; h <= g;
      for (k = 0; k < 15; k = k + 1) W[k] <= W[k + 1];
      W[15] <= w_next;
      if (t == 6'd63) begin
        H[0] <= H[0] + t1 + t2; H[1] <= H[1] + a; H[2] <= H[2] + b; H[3] <= H[3] + c;
        H[4] <= H[4] + d + t1; H[5] <= H[5] + e; H[6] <= H[6] + f; H[7] <= H[7] + g;
        busy <= 1'b0;
        words <= 4'd0;
      end else begin
        t <= t + 6'd1;
      end
    end else if (word_valid) begin
      W[words] <= word;
      if (words == 4'd15) begin
        busy <= 1'b1;
        t <= 6'd0;
        a <= H[0]; b <= H[1]; c <= H[2]; d <= H[3];
        e <= H[4]; f <= H[5]; g <= H[6]; h <= H[7];
      end else begin
        words <= words + 4'd1;
      end
    end
  end
endmodule
"""

# -- XTEA -------------------------------------------------------------------------------------

XTEA_DELTA = 0x9E3779B9


class Xtea:
    def __init__(self) -> None:
        self.key = [0] * 4
        self.busy = self.done = 0
        self.v0 = self.v1 = self.sum = 0
        self.decrypt = 0
        self.n = 0
        self.out = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.__init__()
            return self._outputs()
        key = self.key
        self.done = 0
        if self.busy:
            v0, v1, s = self.v0, self.v1, self.sum
            if not self.decrypt:
                v0 = (v0 + ((((v1 << 4) ^ (v1 >> 5)) + v1) ^ (s + key[s & 3]))) & M32
                s = (s + XTEA_DELTA) & M32
                v1 = (v1 + ((((v0 << 4 & M32) ^ (v0 >> 5)) + v0) ^ (s + key[(s >> 11) & 3]))) & M32
            else:
                v1 = (v1 - ((((v0 << 4 & M32) ^ (v0 >> 5)) + v0) ^ (s + key[(s >> 11) & 3]))) & M32
                s = (s - XTEA_DELTA) & M32
                v0 = (v0 - ((((v1 << 4 & M32) ^ (v1 >> 5)) + v1) ^ (s + key[s & 3]))) & M32
            self.v0, self.v1, self.sum = v0, v1, s
            if self.n == 31:
                self.busy, self.done, self.out = 0, 1, (v0 << 32) | v1
            else:
                self.n += 1
        elif i["start"]:
            self.busy, self.n, self.decrypt = 1, 0, i["decrypt"]
            self.v0, self.v1 = i["din"] >> 32, i["din"] & M32
            self.sum = (XTEA_DELTA * 32) & M32 if i["decrypt"] else 0
        if i["key_we"]:
            self.key[i["key_sel"]] = i["din"] & M32
        return self._outputs()

    def _outputs(self) -> Outputs:
        return {"busy": self.busy, "done": self.done, "dout": self.out}


def _xtea_stimulus(rng: random.Random) -> Iterator[Inputs]:
    """Key loads, then blocks encrypted and decrypted back to back (the ciphertexts of earlier
    blocks fed back in), start held or pulsed, a rare key write while a block is in flight."""
    previous: list[int] = [0]
    while True:
        for sel in rng.sample(range(4), rng.randint(1, 4)):
            yield {"key_we": 1, "key_sel": sel, "start": 0, "decrypt": 0, "din": rng.getrandbits(64)}
        for _ in range(rng.randint(5, 60)):
            block = rng.choice(previous) if rng.random() < 0.3 else rng.getrandbits(64)
            decrypt = rng.getrandbits(1)
            for _ in range(rng.choice((1, 1, 2, 40))):
                yield {"key_we": int(rng.random() < 0.002), "key_sel": rng.randrange(4), "start": 1,
                       "decrypt": decrypt, "din": block}  # fmt: skip
            for _ in range(rng.randint(25, 40)):
                yield {"key_we": int(rng.random() < 0.002), "key_sel": rng.randrange(4), "start": 0,
                       "decrypt": rng.getrandbits(1), "din": rng.getrandbits(64)}  # fmt: skip
            previous = (previous + [block])[-8:]


XTEA_SPEC = """\
An iterative XTEA block cipher (64-bit block, 128-bit key, 32 cycles of two Feistel rounds)
that performs one XTEA cycle per clock cycle, encrypting or decrypting.

Key: at every rising edge where `key_we` is 1, key word K[`key_sel`] takes `din[31:0]` (also
while a block is in flight: later rounds then use the new word). Keys are 0 after reset.

At each rising edge (`rst`: synchronous, active high; clears the key, `busy`, `done`, `dout`):
  - if busy, one XTEA cycle is applied to (v0, v1, sum) (all 32-bit, wrapping), using K as it
    is before this edge, delta = 32'h9E3779B9:
      encrypt: v0 += (((v1 << 4) ^ (v1 >> 5)) + v1) ^ (sum + K[sum & 3]); sum += delta;
               v1 += (((v0 << 4) ^ (v0 >> 5)) + v0) ^ (sum + K[(sum >> 11) & 3])
      decrypt: v1 -= (((v0 << 4) ^ (v0 >> 5)) + v0) ^ (sum + K[(sum >> 11) & 3]); sum -= delta;
               v0 -= (((v1 << 4) ^ (v1 >> 5)) + v1) ^ (sum + K[sum & 3])
    (the second half uses the updated v0, resp. v1, and the updated sum). After the 32nd cycle
    of a block the core becomes idle, `dout` = {v0, v1} and `done` is 1 for that one cycle;
  - else (idle), if `start` is 1, a block starts: v0 = `din[63:32]`, v1 = `din[31:0]`, the
    mode is `decrypt` (0 encrypt, 1 decrypt), sum = 0 to encrypt, 32'hC6EF3720 to decrypt,
    and the core is busy for the next 32 edges. `start` while busy is ignored.
`done` is 0 except in the cycle after the 32nd XTEA cycle. `dout` holds the last result.
"""

XTEA_REFERENCE = """\
module TopModule (
  input clk,
  input rst,
  input key_we,
  input [1:0] key_sel,
  input start,
  input decrypt,
  input [63:0] din,
  output reg busy,
  output reg done,
  output reg [63:0] dout
);
  reg [31:0] key [0:3];
  reg [31:0] v0, v1, sum;
  reg mode;
  reg [4:0] n;
  reg [31:0] e0, e1, es, d0, d1, ds;
  always @* begin
    e0 = v0 + ((((v1 << 4) ^ (v1 >> 5)) + v1) ^ (sum + key[sum[1:0]]));
    es = sum + 32'h9E3779B9;
    e1 = v1 + ((((e0 << 4) ^ (e0 >> 5)) + e0) ^ (es + key[es[12:11]]));
    d1 = v1 - ((((v0 << 4) ^ (v0 >> 5)) + v0) ^ (sum + key[sum[12:11]]));
    ds = sum - 32'h9E3779B9;
    d0 = v0 - ((((d1 << 4) ^ (d1 >> 5)) + d1) ^ (ds + key[ds[1:0]]));
  end
  always @(posedge clk) begin
    if (rst) begin
      key[0] <= 32'd0; key[1] <= 32'd0; key[2] <= 32'd0; key[3] <= 32'd0;
      busy <= 1'b0;
      done <= 1'b0;
      dout <= 64'd0;
      n <= 5'd0;
    end else begin
      done <= 1'b0;
      if (busy) begin
        if (mode) begin
          v0 <= d0; v1 <= d1; sum <= ds;
        end else begin
          v0 <= e0; v1 <= e1; sum <= es;
        end
        if (n == 5'd31) begin
          busy <= 1'b0;
          done <= 1'b1;
          dout <= mode ? {d0, d1} : {e0, e1};
        end else begin
          n <= n + 5'd1;
        end
      end else if (start) begin
        busy <= 1'b1;
        n <= 5'd0;
        mode <= decrypt;
        v0 <= din[63:32];
        v1 <= din[31:0];
        sum <= decrypt ? 32'hC6EF3720 : 32'd0;
      end
      if (key_we) key[key_sel] <= din[31:0];
    end
  end
endmodule
"""

TASKS = [
    DesignTask(
        name="sha256_core",
        category="heavy",
        difficulty="hard",
        spec=SHA_SPEC,
        ports=(In("clk"), In("rst"), In("init"), In("word_valid"), In("word", 32), In("h_sel", 3), Out("busy"),
               Out("h_out", 32), Out("words", 4)),  # fmt: skip
        mealy=("h_out",),  # combinational from the inputs, as the spec says
        clock="clk",
        reset=Reset("rst", rate=0.0005),
        model=Sha256Core,
        stimulus=_sha_stimulus,
        vectors=150_000,
        cycle_cost_us=30,
        reference=SHA_REFERENCE,
    ),
    DesignTask(
        name="xtea_cipher",
        category="heavy",
        difficulty="hard",
        spec=XTEA_SPEC,
        ports=(In("clk"), In("rst"), In("key_we"), In("key_sel", 2), In("start"), In("decrypt"), In("din", 64),
               Out("busy"), Out("done"), Out("dout", 64)),  # fmt: skip
        clock="clk",
        reset=Reset("rst", rate=0.0005),
        model=Xtea,
        stimulus=_xtea_stimulus,
        vectors=150_000,
        cycle_cost_us=10,
        reference=XTEA_REFERENCE,
    ),
]
