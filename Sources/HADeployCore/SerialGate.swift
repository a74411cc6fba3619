/// One operation at a time, in the order asked: an actor alone lets a second caller in at each of its
/// awaits. What reaches one device (concurrent handshakes race and one fails, pymobiledevice3#1656),
/// and the status service's rounds and commands (each sets up the process's usbmuxd routes).
public actor SerialGate {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    public init() {}

    public func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    public func release() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()
        }
    }
}
