extension Int {
    /// `64 MiB`, or the exact byte count when it is not a whole number of MiB; for messages.
    var byteCountText: String {
        self % (1 << 20) == 0 ? "\(self >> 20) MiB" : "\(self) bytes"
    }
}
