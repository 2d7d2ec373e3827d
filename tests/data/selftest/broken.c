/* Deliberately does not compile: a suite record like this is excluded, not held against a list. */
int main(void) { return missing_function(); }
