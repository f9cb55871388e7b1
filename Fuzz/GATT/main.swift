/// libFuzzer target: the GATT payload parsers and `GATT.Session` on arbitrary payloads (see
/// scripts/fuzz.sh). The input is a sequence of values: a selector byte (characteristic), a length
/// byte, then that many payload bytes; each value's milliseconds grow with its position.
private let characteristics: [UInt16] = [0x2A37, 0x2A5B, 0x2A53, 0x2A63, 0x2A19]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    // Every parser on the whole input, and on each prefix's worth of truncation at the end.
    for cut in [size, max(0, size - 1), size / 2] {
        let payload = UnsafeRawBufferPointer(rebasing: bytes[0..<cut])
        if let heartRate = GATT.parseHeartRate(payload) {
            require(heartRate.rrIntervals.count * 2 <= cut, "RR intervals fit the payload")
        }
        _ = GATT.parseCSC(payload)
        if let rsc = GATT.parseRSC(payload) { require(rsc.speed >= 0 && rsc.speed < 256, "RSC speed range") }
        _ = GATT.parseCyclingPower(payload)
    }
    var session = GATT.Session(stopAfterMilliseconds: 500)
    var offset = 0
    var milliseconds = 0
    while offset + 2 <= size {
        let characteristic = characteristics[Int(bytes[offset]) % characteristics.count]
        let length = min(Int(bytes[offset + 1]), size - offset - 2)
        let payload = UnsafeRawBufferPointer(rebasing: bytes[(offset + 2)..<(offset + 2 + length)])
        milliseconds += Int(bytes[offset]) * 7
        if let value = session.reading(
            characteristic: characteristic, payload: payload, milliseconds: bytes[offset] & 1 == 0 ? milliseconds : nil)
        {
            switch value {
            case .speedCadence(let reading):
                require((reading.speed ?? 0).isFinite && (reading.speed ?? 0) >= 0, "speed finite")
                require((reading.cadence ?? 0).isFinite && (reading.cadence ?? 0) >= 0, "cadence finite")
            case .power(let reading):
                require((reading.speed ?? 0).isFinite && (reading.cadence ?? 0).isFinite, "power rates finite")
            default:
                break
            }
        }
        offset += 2 + length
    }
    return 0
}
