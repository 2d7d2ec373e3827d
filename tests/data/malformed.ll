define i32 @main() {
entry:
  %x = add i32 1,
  ret i32 %x
}
