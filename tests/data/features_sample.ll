; Hand-counted fixture for the Autophase test (tests/integration/test_features.py): a switch with two cases to
; one block (duplicate edges), a loop with phis, calls returning i32, constants of several widths.
target triple = "x86_64-pc-linux-gnu"

@counter = internal global i32 0, align 4
@.msg = private unnamed_addr constant [4 x i8] c"abc\00", align 1

declare i32 @external(i32)

define i32 @kind(i32 %x) {
entry:
  switch i32 %x, label %other [
    i32 0, label %zero
    i32 1, label %one
    i32 2, label %one
  ]

zero:
  br label %done

one:
  %a = add nsw i32 %x, 1
  br label %done

other:
  %c = call i32 @external(i32 %x)
  br label %done

done:
  %r = phi i32 [ 0, %zero ], [ %a, %one ], [ %c, %other ]
  ret i32 %r
}

define i64 @loop(i32 %n) {
entry:
  %slot = alloca i32, align 4
  store i32 0, ptr %slot, align 4
  br label %head

head:
  %i = phi i32 [ 0, %entry ], [ %next, %body ]
  %sum = phi i32 [ 0, %entry ], [ %sum.next, %body ]
  %more = icmp slt i32 %i, %n
  br i1 %more, label %body, label %exit

body:
  %k = call i32 @kind(i32 %i)
  %sum.next = xor i32 %sum, %k
  %next = add i32 %i, 1
  br label %head

exit:
  %byte = getelementptr inbounds [4 x i8], ptr @.msg, i64 0, i64 1
  %ch = load i8, ptr %byte, align 1
  %wide = sext i8 %ch to i64
  %scaled = mul i64 %wide, -1
  %total = sext i32 %sum to i64
  %result = add i64 %scaled, %total
  store i32 %sum, ptr @counter, align 4
  ret i64 %result
}
