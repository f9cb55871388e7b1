// libFuzzer target: the chunk decoder (Sources/WorkoutStore/Chunks, compiled alone; see scripts/fuzz.sh).
//
// Properties: decoding arbitrary bytes throws ChunkCodecError or succeeds, never traps; a decoded
// chunk encodes and decodes again to the same bits; columns made from the input's bytes (any double
// bit patterns, irregular ordinals) round-trip bit-identically.
import Foundation

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("property violated: \(message())") }
}

func bits(_ values: [Double]) -> [UInt64] { values.map(\.bitPattern) }
func bits(_ values: [Double?]) -> [UInt64?] { values.map { $0?.bitPattern } }

func sameSamples(_ a: SampleColumns, _ b: SampleColumns) -> Bool {
    a.ordinals == b.ordinals && bits(a.starts) == bits(b.starts) && bits(a.ends) == bits(b.ends)
        && bits(a.values) == bits(b.values) && a.units == b.units && a.unitIndexes == b.unitIndexes
        && a.metadata == b.metadata && a.metadataIndexes == b.metadataIndexes
}

func sameRoute(_ a: RouteColumns, _ b: RouteColumns) -> Bool {
    a.ordinals == b.ordinals && bits(a.dates) == bits(b.dates) && bits(a.latitudes) == bits(b.latitudes)
        && bits(a.longitudes) == bits(b.longitudes) && bits(a.altitudes) == bits(b.altitudes)
        && bits(a.speeds) == bits(b.speeds) && bits(a.courses) == bits(b.courses)
        && bits(a.accuracies) == bits(b.accuracies)
}

/// Doubles from the input: raw bit patterns, or small decimals (the scaled path), by a selector byte.
struct Source {
    let bytes: [UInt8]
    var position = 0
    mutating func byte() -> UInt8 {
        guard !bytes.isEmpty else { return 0 }
        defer { position += 1 }
        return bytes[position % bytes.count]
    }
    mutating func double() -> Double {
        switch byte() % 4 {
        case 0:
            var raw: UInt64 = 0
            for _ in 0..<8 { raw = raw << 8 | UInt64(byte()) }
            return Double(bitPattern: raw)
        case 1: return Double(Int(byte()) - 128) / 10
        case 2: return 800_000_000 + Double(position) + Double(byte() % 4) * 0.25
        default: return Double(byte())
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    if let columns = try? ChunkCodec.decodeSamples(input) {
        let again = try? ChunkCodec.decodeSamples(ChunkCodec.encode(columns))
        require(again.map { sameSamples($0, columns) } == true, "decoded samples re-encode to the same bits")
    }
    if let columns = try? ChunkCodec.decodeRoute(input) {
        let again = try? ChunkCodec.decodeRoute(ChunkCodec.encode(columns))
        require(again.map { sameRoute($0, columns) } == true, "decoded route re-encodes to the same bits")
    }
    // Columns built from the input round-trip exactly.
    var source = Source(bytes: input)
    let count = input.isEmpty ? 0 : Int(source.byte()) % 40
    var samples = SampleColumns()
    var route = RouteColumns()
    var ordinal: Int64 = Int64(source.byte())
    samples.units = source.byte() % 2 == 0 ? ["count/min"] : ["m", "km"]
    samples.metadata = source.byte() % 3 == 0 ? [] : [[1, 2], Array("{}".utf8)]
    for _ in 0..<count {
        ordinal += 1 + Int64(source.byte() % 5)
        samples.ordinals.append(ordinal)
        samples.starts.append(source.double())
        samples.ends.append(source.double())
        samples.values.append(source.double())
        if samples.units.count > 1 { samples.unitIndexes.append(Int(source.byte()) % samples.units.count) }
        if samples.metadata.count > 1 { samples.metadataIndexes.append(Int(source.byte()) % samples.metadata.count) }
        route.ordinals.append(ordinal)
        route.dates.append(source.double())
        route.latitudes.append(source.double())
        route.longitudes.append(source.double())
        route.altitudes.append(source.byte() % 3 == 0 ? nil : source.double())
        route.speeds.append(source.byte() % 2 == 0 ? nil : source.double())
        route.courses.append(nil)
        route.accuracies.append(source.double())
    }
    do {
        require(sameSamples(try ChunkCodec.decodeSamples(ChunkCodec.encode(samples)), samples), "samples round trip")
        require(sameRoute(try ChunkCodec.decodeRoute(ChunkCodec.encode(route)), route), "route round trip")
    } catch {
        require(false, "an encoded chunk does not decode: \(error)")
    }
    return 0
}

/// With `CHUNK_FUZZ_SEEDS=DIR` the binary writes a seed corpus of valid chunks to DIR and exits.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> Int32 {
    guard let directory = ProcessInfo.processInfo.environment["CHUNK_FUZZ_SEEDS"] else { return 0 }
    var samples = SampleColumns()
    samples.units = ["count/min"]
    var route = RouteColumns()
    for index in 0..<20 {
        samples.ordinals.append(Int64(index * 3))
        samples.starts.append(800_000_000 + Double(index))
        samples.ends.append(800_000_000 + Double(index))
        samples.values.append(140 + Double(index % 7))
        route.ordinals.append(Int64(index))
        route.dates.append(800_000_000 + Double(index))
        route.latitudes.append(47.9 + Double(index) * 0.000_091_114_4)
        route.longitudes.append(11.3 + Double(index) / 3)
        route.altitudes.append(index % 2 == 0 ? 600 : nil)
        route.speeds.append(1.014_285_714_285_714_2)
        route.courses.append(nil)
        route.accuracies.append(nil)
    }
    var withMetadata = samples
    withMetadata.units = ["m", "km"]
    withMetadata.unitIndexes = samples.ordinals.map { Int($0 % 2) }
    withMetadata.metadata = [Array("{}".utf8), Array("{\"Lap\":{\"int\":{\"_0\":1}}}".utf8)]
    withMetadata.metadataIndexes = samples.ordinals.map { Int($0 % 2) }
    withMetadata.values = samples.values.map { $0 / 7 }
    for (name, bytes) in [
        ("samples", ChunkCodec.encode(samples)), ("samples-tables", ChunkCodec.encode(withMetadata)),
        ("route", ChunkCodec.encode(route)),
    ] {
        _ = FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(bytes))
    }
    exit(0)
}
