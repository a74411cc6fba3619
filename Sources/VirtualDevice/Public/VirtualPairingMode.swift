/// How the host's pair record comes to exist (PROTOCOL.md §2.10).
public enum VirtualPairingMode: String, Sendable, Codable {
    /// The emulator generates a pair record and stores it in the virtual usbmuxd on first start,
    /// as if the host had been trusted long ago. Any other host asking to pair is denied
    /// (`UserDeniedPairing`, the user tapped "Don't Trust") unless `VirtualUsbmuxd.acceptNextPairing`
    /// says the user will trust it.
    case prePaired
    /// No record at first: the client pairs on first contact (`Pair`, `SavePairRecord`), as with a
    /// freshly plugged-in real device whose user taps "Trust". Over USB only: no twin pairs over the
    /// network (`PairingProhibitedOverThisConnection`).
    case hostPairs
}
