import Foundation
import HADeployKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A test helper (not shipped): one racer in `DeviceLockRaceTests`. It waits for the start time,
/// takes the lock with `DeviceLock.acquire` (retrying while busy), holds it for `hold` milliseconds
/// and appends "start end pid" (monotonic nanoseconds) to the journal; `die` makes it die holding
/// the lock instead.
///
///     hadeploy-lock-racer <lock dir> <journal> <start at (uptime ns)> <hold ms> [hold|die]
@main
enum LockRacer {
    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count >= 5, let startAt = UInt64(arguments[3]), let hold = UInt32(arguments[4]) else {
            FileHandle.standardError.write(
                Data("usage: hadeploy-lock-racer dir journal start-ns hold-ms\n".utf8))
            exit(64)
        }
        let directory = URL(fileURLWithPath: arguments[1])
        let die = arguments.count > 5 && arguments[5] == "die"
        while DispatchTime.now().uptimeNanoseconds < startAt { usleep(200) }
        // Busy means another racer holds it: try again (every racer locks once, one after the other,
        // which exercises release and takeover as often as possible).
        let giveUp = DispatchTime.now().uptimeNanoseconds + 20_000_000_000
        var acquired: DeviceLock?
        while acquired == nil {
            do {
                acquired = try DeviceLock.acquire(device: "race", key: "RACE-UDID", directory: directory)
            } catch is DeviceBusyError {
                if DispatchTime.now().uptimeNanoseconds > giveUp {
                    print("gave up")
                    exit(2)
                }
                usleep(500)
            } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                exit(1)
            }
        }
        guard let lock = acquired else { exit(1) }
        if die {
            FileHandle.standardOutput.write(Data("dying\n".utf8))
            // Dies holding the lock, as a crashed or killed run does.
            kill(getpid(), SIGKILL)
        }
        let start = DispatchTime.now().uptimeNanoseconds
        usleep(hold * 1000)
        let end = DispatchTime.now().uptimeNanoseconds
        // Recorded before release: the interval is a subset of the time the lock was held.
        let fd = open(arguments[2], O_WRONLY | O_APPEND | O_CREAT, 0o600)
        let line = "\(start) \(end) \(getpid())\n"
        _ = line.withCString { write(fd, $0, strlen($0)) }
        close(fd)
        lock.release()
        print("locked")
    }
}
