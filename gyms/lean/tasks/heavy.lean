/-
The heavy suite of the `lean` gym (`-o suite=heavy`): original statements provable in core
Lean 4 (no Mathlib) whose check does real work: `decide` over large finite domains (the
kernel evaluates the decision procedure: `decide +kernel`), `omega` over many hypotheses or
several moduli, and computations over concrete lists of hundreds of elements. Same format as
core.lean: a doc comment, `-- wrong:` lines (realistic proofs that must fail), the theorem
and its reference proof. No proof here runs compiled code (`native_decide` is refused by the
checker); the cost is the kernel's and the elaborator's own work.
-/

/-- There are 46 primes below 200 (trial division by every smaller number). -/
-- wrong: by omega
-- wrong: by simp [List.range_succ]
-- wrong: by decide
theorem heavy_primes_below_200 :
    ((List.range 200).filter (fun n => 2 ≤ n && (List.range n).all (fun d => d < 2 || n % d != 0))).length = 46 := by
  decide +kernel

/-- Multiplication of residues below 40 commutes modulo 41, checked on every pair. -/
-- wrong: by intro a b; omega
theorem heavy_fin_mul_mod_comm : ∀ a b : Fin 40, (a.val * b.val) % 41 = (b.val * a.val) % 41 := by
  decide

/-- Multiplication distributes over addition in `Fin 12`, checked on all 1728 triples. -/
-- wrong: by intro a b c; simp [Fin.add_mul]
-- wrong: by intro a b c; omega
-- wrong: by have h : ∀ a b c : Fin 12, a * (b + c) = a * b + a * c := (by decide +kernel); intro a b c; exact h c a b
-- wrong: by have h : ∀ a b c : Fin 11, (a + b) * c = a * c + b * c := (by decide +kernel); exact h
theorem heavy_fin_distrib_12 : ∀ a b c : Fin 12, (a + b) * c = a * c + b * c := by
  decide +kernel

/-- Every nonzero residue modulo 53 has a multiplicative inverse. -/
-- wrong: by intro a ha; exact ⟨a, by omega⟩
-- wrong: by intro a ha; exists a⁻¹
-- wrong: by have h : ∀ a : Fin 53, a ≠ 0 → ∃ b : Fin 53, b * a = 1 := (by decide +kernel); exact h
-- wrong: by have h : ∀ a : Fin 53, a ≠ 0 → ∃ b : Fin 53, a * b = 1 ∧ b ≠ 0 := (by decide +kernel); exact h
theorem heavy_fin53_inverse : ∀ a : Fin 53, a ≠ 0 → ∃ b : Fin 53, a * b = 1 := by
  decide +kernel

/-- A chain of twelve exclusive ors can be read backwards (all 4096 inputs). -/
-- wrong: by intro a b c d e f g h i j k l; rfl
-- wrong: by intro a b c d e f g h i j k l; cases a <;> simp
theorem heavy_bool_xor_reverse :
    ∀ a b c d e f g h i j k l : Bool,
      (a ^^ b ^^ c ^^ d ^^ e ^^ f ^^ g ^^ h ^^ i ^^ j ^^ k ^^ l) =
        (l ^^ k ^^ j ^^ i ^^ h ^^ g ^^ f ^^ e ^^ d ^^ c ^^ b ^^ a) := by
  decide +kernel

/-- The first hundred squares are strictly increasing (every pair compared). -/
-- wrong: by simp
-- wrong: by omega
-- wrong: by have h : List.Pairwise (· ≤ ·) ((List.range 100).map (fun i => i * i)) := (by decide +kernel); exact h
theorem heavy_squares_sorted : List.Pairwise (· < ·) ((List.range 100).map (fun i => i * i)) := by
  decide +kernel

/-- Every start below 32 reaches 1 within 112 Collatz steps. -/
-- wrong: by omega
-- wrong: by intro n h₁ h₂; simp
-- wrong: by have h : ∀ n, n < 31 → 0 < n → (List.range 112).foldl (fun m _ => if m ≤ 1 then m else if m % 2 = 0 then m / 2 else 3 * m + 1) n = 1 := (by decide +kernel); intro n h₁ h₂; exact h n (by omega) h₂
-- wrong: by have h : ∀ n, n < 32 → 0 < n → (List.range 100).foldl (fun m _ => if m ≤ 1 then m else if m % 2 = 0 then m / 2 else 3 * m + 1) n = 1 := (by decide +kernel); exact h
theorem heavy_collatz_below_32 :
    ∀ n, n < 32 → 0 < n →
      (List.range 112).foldl (fun m _ => if m ≤ 1 then m else if m % 2 = 0 then m / 2 else 3 * m + 1) n = 1 := by
  decide +kernel

/-- Nicomachus: four times the sum of the first cubes is a square, for every n below 80. -/
-- wrong: by intro n hn; induction n <;> simp_all
-- wrong: by omega
-- wrong: by have h : ∀ n, n < 79 → 4 * ((List.range n).map (fun i => i ^ 3)).sum = (n * (n - 1)) ^ 2 := (by decide +kernel); intro n hn; exact h n (by omega)
-- wrong: by have h : ∀ n, n < 80 → 4 * ((List.range (n + 1)).map (fun i => i ^ 3)).sum = (n * (n + 1)) ^ 2 := (by decide +kernel); intro n hn; exact h n hn
theorem heavy_cubes_sum_80 :
    ∀ n, n < 80 → 4 * ((List.range n).map (fun i => i ^ 3)).sum = (n * (n - 1)) ^ 2 := by
  decide +kernel

/-- Chinese remainders: four congruences fix the residue modulo 1155. -/
-- wrong: by simp
-- wrong: by decide
-- wrong: by have h : x % 385 = 267 := (by omega); omega
-- wrong: by have h : x % 105 = 22 := (by omega); omega
theorem heavy_crt_four (x : Nat) (h₁ : x % 3 = 2) (h₂ : x % 5 = 3) (h₃ : x % 7 = 2) (h₄ : x % 11 = 4) :
    x % 1155 = 653 := by
  omega

/-- SEND + MORE = MONEY forces M = 1, O = 0 and S = 9, from the column sums and two distinct letters. -/
-- wrong: by simp
-- wrong: by constructor <;> simp_all
theorem heavy_send_more_money (s e n d m o r y : Nat) (hs : s ≤ 9) (he : e ≤ 9) (hn : n ≤ 9) (hd : d ≤ 9)
    (hm : m ≤ 9) (ho : o ≤ 9) (hr : r ≤ 9) (hy : y ≤ 9) (hm0 : 0 < m) (hom : o ≠ m) (hno : n ≠ o)
    (h : 1000 * s + 100 * e + 10 * n + d + (1000 * m + 100 * o + 10 * r + e) =
      10000 * m + 1000 * o + 100 * n + 10 * e + y) :
    m = 1 ∧ o = 0 ∧ s = 9 := by
  omega

/-- Thirty-two strictly increasing integers packed into a gap of 31 are consecutive. -/
-- wrong: by simp
-- wrong: by exact Int.lt_trans h₁ h₂
-- wrong: by have h' : x₃₂ ≤ x₁ + 30 := (by omega); omega
-- wrong: by have h' : x₁₆ = x₁ + 16 := (by omega); omega
theorem heavy_chain_32 (x₁ x₂ x₃ x₄ x₅ x₆ x₇ x₈ x₉ x₁₀ x₁₁ x₁₂ x₁₃ x₁₄ x₁₅ x₁₆
    x₁₇ x₁₈ x₁₉ x₂₀ x₂₁ x₂₂ x₂₃ x₂₄ x₂₅ x₂₆ x₂₇ x₂₈ x₂₉ x₃₀ x₃₁ x₃₂ : Int)
    (h₁ : x₁ < x₂) (h₂ : x₂ < x₃) (h₃ : x₃ < x₄) (h₄ : x₄ < x₅) (h₅ : x₅ < x₆) (h₆ : x₆ < x₇)
    (h₇ : x₇ < x₈) (h₈ : x₈ < x₉) (h₉ : x₉ < x₁₀) (h₁₀ : x₁₀ < x₁₁) (h₁₁ : x₁₁ < x₁₂)
    (h₁₂ : x₁₂ < x₁₃) (h₁₃ : x₁₃ < x₁₄) (h₁₄ : x₁₄ < x₁₅) (h₁₅ : x₁₅ < x₁₆) (h₁₆ : x₁₆ < x₁₇)
    (h₁₇ : x₁₇ < x₁₈) (h₁₈ : x₁₈ < x₁₉) (h₁₉ : x₁₉ < x₂₀) (h₂₀ : x₂₀ < x₂₁) (h₂₁ : x₂₁ < x₂₂)
    (h₂₂ : x₂₂ < x₂₃) (h₂₃ : x₂₃ < x₂₄) (h₂₄ : x₂₄ < x₂₅) (h₂₅ : x₂₅ < x₂₆) (h₂₆ : x₂₆ < x₂₇)
    (h₂₇ : x₂₇ < x₂₈) (h₂₈ : x₂₈ < x₂₉) (h₂₉ : x₂₉ < x₃₀) (h₃₀ : x₃₀ < x₃₁) (h₃₁ : x₃₁ < x₃₂)
    (h : x₃₂ ≤ x₁ + 31) :
    x₈ = x₁ + 7 ∧ x₁₆ = x₁ + 15 ∧ x₂₄ = x₁ + 23 := by
  omega

/-- There are 13 Pythagorean triples a < b < c with c below 36 (all triples enumerated). -/
-- wrong: by omega
-- wrong: by simp
theorem heavy_triples_below_36 :
    ((List.range 36).flatMap (fun c => (List.range c).flatMap (fun b =>
      ((List.range b).filter (fun a => 0 < a && a * a + b * b == c * c)).map (fun a => (a, b, c))))).length = 13 := by
  decide +kernel

/-- Multiplying by 37 permutes the residues modulo 101: the 101 products are distinct. -/
-- wrong: by simp
-- wrong: by omega
-- wrong: by have h : ((List.range 100).map (fun i => i * 37 % 101)).Nodup := (by decide +kernel); exact h
theorem heavy_mul37_nodup : ((List.range 101).map (fun i => i * 37 % 101)).Nodup := by
  decide +kernel

/-- Casting out nines: a number below 1000 and its digit sum agree modulo 9. -/
-- wrong: by omega
-- wrong: by intro n hn; simp
-- wrong: by have h : ∀ n, n < 999 → (n % 10 + n / 10 % 10 + n / 100) % 9 = n % 9 := (by decide +kernel); intro n hn; exact h n (by omega)
-- wrong: by have h : ∀ n, n ≤ 999 → (n % 10 + n / 10 % 10 + n / 100) % 9 = n % 9 := (by decide +kernel); exact h
theorem heavy_digit_sum_mod_nine : ∀ n, n < 1000 → (n % 10 + n / 10 % 10 + n / 100) % 9 = n % 9 := by
  decide +kernel

/-- No square below a million leaves remainder 2 modulo 4 (every root below 1000 checked). -/
-- wrong: by omega
-- wrong: by decide
theorem heavy_sq_mod_four : ∀ n, n < 1000 → n * n % 4 ≠ 2 := by
  decide +kernel

/-- The product of gcd and lcm is the product, for every pair below 50. -/
-- wrong: by omega
-- wrong: by intro a b; rfl
-- wrong: by have h : ∀ a b : Fin 49, Nat.gcd a b * Nat.lcm a b = a * b := (by decide +kernel); intro a b; exact h a b
-- wrong: by have h : ∀ a b : Fin 50, Nat.lcm a b * Nat.gcd a b = a * b := (by decide +kernel); exact h
theorem heavy_gcd_lcm_50 : ∀ a b : Fin 50, Nat.gcd a b * Nat.lcm a b = a * b := by
  decide +kernel

/-- Fermat's little theorem for 101 and 103, checked on every number below 600. -/
-- wrong: by omega
-- wrong: by intro a ha; simp
-- wrong: by have h : ∀ a, a < 599 → a ^ 101 % 101 = a % 101 ∧ a ^ 103 % 103 = a % 103 := (by decide +kernel); intro a ha; exact h a (by omega)
-- wrong: by have h : ∀ a, a ≤ 599 → a ^ 101 % 101 = a % 101 ∧ a ^ 103 % 103 = a % 103 := (by decide +kernel); exact h
theorem heavy_fermat_101_103 : ∀ a, a < 600 → a ^ 101 % 101 = a % 101 ∧ a ^ 103 % 103 = a % 103 := by
  decide +kernel

/-- Six times the sum of the first n squares is (n - 1) n (2n - 1), for every n below 120. -/
-- wrong: by omega
-- wrong: by intro n hn; induction n <;> simp_all
-- wrong: by have h : ∀ n, n < 119 → 6 * ((List.range n).map (fun i => i * i)).sum = (n - 1) * n * (2 * n - 1) := (by decide +kernel); intro n hn; exact h n (by omega)
-- wrong: by have h : ∀ n, n ≤ 119 → 6 * ((List.range n).map (fun i => i * i)).sum = (n - 1) * n * (2 * n - 1) := (by decide +kernel); exact h
theorem heavy_sum_squares_120 :
    ∀ n, n < 120 → 6 * ((List.range n).map (fun i => i * i)).sum = (n - 1) * n * (2 * n - 1) := by
  decide +kernel
