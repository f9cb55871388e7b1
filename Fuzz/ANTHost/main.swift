/// libFuzzer target: the ANT host (Sources/WorkoutSensors/ANTHost.swift) on arbitrary stick responses
/// (see scripts/fuzz.sh).
///
/// The first byte picks the plan (channels or scan, a pin, the search timeout); the rest is what the
/// stick "said", fed in chunks whose sizes and the time between them come from the input. Properties:
/// everything the host writes is whole, well-formed frames of host messages; it never configures more
/// channels than the stick reported; a pinned profile's channel id carries the pinned number; the
/// bytes it holds stay bounded.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let selector = bytes[0]
    guard let key = ANTNetworkKey(bytes: [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF]) else { return 0 }
    let plan = ANTHostPlan(
        networkKey: key, pinned: selector & 1 != 0 ? [.power: 4711] : [:], searchTimeout: selector >> 2,
        mode: selector & 2 != 0 ? .scan : .channels, responseTimeout: 1, reopenInitial: 0.25, reopenMaximum: 1)
    var host = ANTHost(plan: plan)
    var now = 0.0
    var written = host.connected(now: now)
    var offset = 1
    var step = 0
    while offset < bytes.count {
        let chunk = 1 + Int(bytes[(offset + step) % bytes.count] % 23)
        let end = min(bytes.count, offset + chunk)
        now += Double(bytes[offset] % 8) * 0.2
        written += host.receive(Array(bytes[offset..<end]), now: now)
        written += host.tick(now: now)
        _ = host.takeEvents()
        if step % 7 == 6 {
            host.disconnected()
            written += host.connected(now: now)
        }
        if let count = host.stickChannels {
            require(host.channels.count <= max(count, 0), "no more channels than the stick has")
        }
        offset = end
        step += 1
    }
    checkFrames(written, pinned: plan.mode == .channels && selector & 1 != 0)
    return 0
}

/// Whole frames of host-to-stick messages, each with a good checksum.
func checkFrames(_ bytes: [UInt8], pinned: Bool) {
    let hostIDs: Set<UInt8> = [0x4A, 0x4D, 0x46, 0x42, 0x51, 0x44, 0x43, 0x45, 0x4B, 0x4C, 0x5B, 0x66, 0x6E]
    var index = 0
    while index < bytes.count {
        require(bytes[index] == 0xA4, "frame starts with the sync byte")
        require(index + 1 < bytes.count, "frame has a length")
        let length = Int(bytes[index + 1])
        let end = index + length + 4
        require(length >= 1 && length <= 9 && end <= bytes.count, "frame is whole")
        require(hostIDs.contains(bytes[index + 2]), "a host message id")
        var sum: UInt8 = 0
        for offset in index..<(end - 1) { sum ^= bytes[offset] }
        require(sum == bytes[end - 1], "checksum")
        if pinned, bytes[index + 2] == 0x51, bytes[index + 6] == 11 {
            require(bytes[index + 4] == 0x67 && bytes[index + 5] == 0x12, "a pinned power channel keeps 4711")
        }
        index = end
    }
}
