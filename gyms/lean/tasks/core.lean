/-
The built-in tasks of the `lean` gym: original statements provable in core Lean 4 (no
Mathlib), each with a reference proof. `gyms.lean.tasks` reads this file: a task is a doc
comment, optional `-- wrong:` lines (realistic proofs that must fail, for the replay policy
and the conformance check), and the theorem with its reference proof. The whole file is a
valid Lean file, so `lean core.lean` checks every reference at once.
-/

/-- Three natural numbers can be added in any order. -/
-- wrong: by rfl
theorem nat_add_three_rev (a b c : Nat) : a + b + c = c + b + a := by
  omega

/-- A natural number is at most its double. -/
-- wrong: by simp
theorem nat_le_double (n : Nat) : n ≤ 2 * n := by
  omega

/-- Truncated subtraction undone, when nothing was truncated. -/
-- wrong: by simp
theorem nat_sub_add_of_le (a b : Nat) (h : b ≤ a) : a - b + b = a := by
  omega

/-- Two strict steps up make a gap of at least two. -/
-- wrong: by exact Nat.lt_trans h₁ h₂
theorem nat_gap_two (a b c : Nat) (h₁ : a < b) (h₂ : b < c) : a + 2 ≤ c := by
  omega

/-- Every natural number is even or odd. -/
-- wrong: by decide
theorem nat_mod_two_cases (n : Nat) : n % 2 = 0 ∨ n % 2 = 1 := by
  omega

/-- Halving never increases a natural number. -/
-- wrong: by exact Nat.le_refl n
theorem nat_half_le (n : Nat) : n / 2 ≤ n := by
  omega

/-- Multiplication by three is injective. -/
-- wrong: by simp at h
theorem nat_three_mul_inj (x y : Nat) (h : 3 * x = 3 * y) : x = y := by
  omega

/-- The minimum of two numbers is at most their maximum. -/
-- wrong: by exact Nat.min_le_left a b
theorem nat_min_le_max (a b : Nat) : min a b ≤ max a b := by
  omega

/-- Division with remainder by five reassembles the number. -/
-- wrong: by rfl
theorem nat_div_mod_five (n : Nat) : 5 * (n / 5) + n % 5 = n := by
  omega

/-- Double negation cancels inside a sum of integers. -/
-- wrong: by rfl
theorem int_neg_neg_add (a b : Int) : -(-a) + b = b + a := by
  omega

/-- Subtracting and adding back the same integer changes nothing. -/
-- wrong: by simp
theorem int_sub_add_back (a b c : Int) : a - b + (b - c) + c = a := by
  omega

/-- Twice a positive integer, plus one, is positive. -/
-- wrong: by exact h
theorem int_two_mul_succ_pos (x : Int) (h : 0 < x) : 0 < 2 * x + 1 := by
  omega

/-- A small linear system over the integers has one solution. -/
-- wrong: by rfl
theorem int_linear_system (x y : Int) (h₁ : x + y = 10) (h₂ : x - y = 2) : x = 6 := by
  omega

/-- Integer remainders by two are zero or one. -/
-- wrong: by simp
theorem int_emod_two_cases (n : Int) : n % 2 = 0 ∨ n % 2 = 1 := by
  omega

/-- An integer and its negation have the same absolute value. -/
-- wrong: by rfl
theorem int_natAbs_neg_eq (a : Int) : (-a).natAbs = a.natAbs := by
  omega

/-- The sum of the first ten naturals, computed. -/
-- wrong: by omega
theorem nat_range_sum_ten : (List.range 10).sum = 45 := by
  decide

/-- No square leaves remainder three modulo eight (checked on residues). -/
-- wrong: by omega
theorem fin_square_mod_eight : ∀ n : Fin 8, n.val * n.val % 8 ≠ 3 := by
  decide

/-- The greatest common divisor of 12 and 18. -/
-- wrong: by omega
theorem nat_gcd_twelve_eighteen : Nat.gcd 12 18 = 6 := by
  decide

/-- Boolean conjunction commutes, checked on all inputs. -/
-- wrong: by intro a b; rfl
theorem bool_and_comm_all : ∀ a b : Bool, (a && b) = (b && a) := by
  decide

/-- Two to the tenth. -/
-- wrong: by norm_num
theorem nat_two_pow_ten : 2 ^ 10 = 1024 := by
  decide

/-- Appending lists adds their lengths. -/
-- wrong: by rfl
theorem list_length_append_comm (l₁ l₂ : List Nat) : (l₁ ++ l₂).length = l₂.length + l₁.length := by
  simp [Nat.add_comm]

/-- Reversing twice gives back the list. -/
-- wrong: by rfl
theorem list_reverse_reverse_append (l m : List Nat) : (l ++ m).reverse.reverse = l ++ m := by
  simp

/-- Mapping the identity function changes nothing. -/
-- wrong: by omega
theorem list_map_fun_id (l : List Nat) : l.map (fun x => x) = l := by
  simp

/-- Mapping keeps the length. -/
-- wrong: by rfl
theorem list_length_map_any (f : Nat → Nat) (l : List Nat) : (l.map f).length = l.length := by
  simp

/-- A member of the left list is a member of the concatenation. -/
-- wrong: by exact h
theorem list_mem_append_of_left (a : Nat) (l m : List Nat) (h : a ∈ l) : a ∈ l ++ m := by
  simp [h]

/-- Filtering never makes a list longer. -/
-- wrong: by simp
theorem list_filter_length_le (p : Nat → Bool) (l : List Nat) : (l.filter p).length ≤ l.length := by
  exact List.length_filter_le p l

/-- A list of n copies has length n. -/
-- wrong: by rfl
theorem list_replicate_length_eq (n a : Nat) : (List.replicate n a).length = n := by
  simp

/-- Mapping distributes over concatenation (by induction on the first list). -/
-- wrong: by rfl
theorem list_map_append_induct (f : Nat → Nat) (l m : List Nat) : (l ++ m).map f = l.map f ++ m.map f := by
  induction l with
  | nil => rfl
  | cons x xs ih => simp [ih]

/-- Every natural number is below two to its power. -/
-- wrong: by omega
theorem nat_lt_two_pow_self (n : Nat) : n < 2 ^ n := by
  induction n with
  | zero => decide
  | succ k ih => rw [Nat.pow_succ]; omega

/-- Zero is a left identity for addition (by induction). -/
-- wrong: by exact Nat.add_zero n
theorem nat_zero_add_induct (n : Nat) : 0 + n = n := by
  induction n with
  | zero => rfl
  | succ k ih => rw [Nat.add_succ, ih]

/-- Conjunction can be swapped. -/
-- wrong: fun h => h
theorem logic_and_swap (p q : Prop) : p ∧ q → q ∧ p := by
  intro ⟨hp, hq⟩
  exact ⟨hq, hp⟩

/-- Disjunction can be swapped. -/
-- wrong: fun h => h
theorem logic_or_swap (p q : Prop) : p ∨ q → q ∨ p := by
  intro h
  cases h with
  | inl hp => exact Or.inr hp
  | inr hq => exact Or.inl hq

/-- A true proposition is not false. -/
-- wrong: by intro h; exact h
theorem logic_not_not_intro (p : Prop) (hp : p) : ¬¬p := by
  intro hn
  exact hn hp

/-- Implication is transitive. -/
-- wrong: fun hp => hpq hp
theorem logic_imp_chain (p q r : Prop) (hpq : p → q) (hqr : q → r) : p → r := by
  intro hp
  exact hqr (hpq hp)

/-- The contrapositive of an implication. -/
-- wrong: fun hp => hp
theorem logic_contrapositive (p q : Prop) (h : p → q) (hnq : ¬q) : ¬p := by
  intro hp
  exact hnq (h hp)

/-- Neither-nor, De Morgan's way. -/
-- wrong: by intro h; constructor <;> exact h
theorem logic_not_or_split (p q : Prop) : ¬(p ∨ q) → ¬p ∧ ¬q := by
  intro h
  exact ⟨fun hp => h (Or.inl hp), fun hq => h (Or.inr hq)⟩

/-- A universally true conjunction gives its left half everywhere. -/
-- wrong: fun h x => h x
theorem logic_forall_and_left (α : Type) (p q : α → Prop) : (∀ x, p x ∧ q x) → ∀ x, p x := by
  intro h x
  exact (h x).1

/-- There is always a larger natural number. -/
-- wrong: ⟨n, by omega⟩
theorem nat_exists_greater (n : Nat) : ∃ m, m > n := by
  exact ⟨n + 1, by omega⟩

/-- Every natural number is twice something, or one more. -/
-- wrong: ⟨n, by omega⟩
theorem nat_even_or_odd_witness (n : Nat) : ∃ k, n = 2 * k ∨ n = 2 * k + 1 := by
  exact ⟨n / 2, by omega⟩

/-- A Boolean or its negation holds. -/
-- wrong: by rfl
theorem bool_or_not_self (b : Bool) : (b || !b) = true := by
  cases b <;> rfl

/-- Mapping the identity over an option changes nothing. -/
-- wrong: by rfl
theorem option_map_id_eq (x : Option Nat) : x.map id = x := by
  cases x <;> rfl
