import CLibSSH
import Foundation

/// One local client and its channel.
final class ForwardLink {
    let fd: Int32
    let channel: ChannelHandle
    var fromClient = Data()
    var fromServer = Data()
    var toClient = Data()
    var raw = false
    var awaitingConnect = false
    var clientClosed = false
    var serverClosed = false
    var finished = false

    init(fd: Int32, channel: ChannelHandle) {
        self.fd = fd
        self.channel = channel
    }

    func close() {
        if fd >= 0 { closeDescriptor(fd) }
        _ = ssh_channel_send_eof(channel.raw)
    }
}
