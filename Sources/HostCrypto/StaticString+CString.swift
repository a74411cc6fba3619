extension StaticString {
    /// The literal as a C string that lives as long as the program: for OpenSSL calls that keep the
    /// pointer (an encoder's format and structure, a key context's algorithm name) instead of copying.
    var cString: UnsafePointer<CChar> {
        UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self)
    }
}
