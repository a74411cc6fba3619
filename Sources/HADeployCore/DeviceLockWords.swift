/// How a device behind its passcode is said, the same wherever it is found (a deploy step, a status).
public enum DeviceLockWords {
    /// Restarted and not unlocked since (Before First Unlock): iOS opens none of the user's data —
    /// no install, no app container, no launch — until its passcode is entered once.
    public static let beforeFirstUnlock = "rebooted, needs one unlock"
}
