/// Lets one operation at a time reach a device. Concurrent handshakes to one device race and one
/// fails (pymobiledevice3#1656), and an actor alone does not prevent interleaving across awaits.
actor SerialGate {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()
        }
    }
}
