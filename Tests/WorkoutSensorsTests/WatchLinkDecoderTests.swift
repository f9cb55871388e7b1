import Foundation
import Testing
import WorkoutSensors

@Suite("Watch-link decoder")
struct WatchLinkDecoderTests {
    @Test func roundTripsEveryMessageOfTheEncoders() throws {
        var bytes = WatchLink.hello(device: "Test, watch*1")
        var expected: [SensorReading] = [SensorReading(source: .watchLink, value: .hello(device: "Test  watch 1"))]
        var milliseconds = 1000
        for kind in WatchLink.LengthKind.allCases {
            for style in WatchLink.Style.allCases.map(Optional.some) + [nil] {
                for strokes in [nil, 0, 17] {
                    milliseconds += 25_000
                    bytes += WatchLink.length(
                        endMilliseconds: milliseconds, durationMilliseconds: 24_500, kind: kind, style: style,
                        strokes: strokes)
                    expected.append(
                        SensorReading(
                            source: .watchLink, time: .watchMilliseconds(milliseconds),
                            value: .swimLength(
                                SwimLength(
                                    endMilliseconds: milliseconds, durationMilliseconds: 24_500, kind: kind,
                                    style: style,
                                    strokes: strokes))))
                }
            }
        }
        bytes += WatchLink.strokes(endMilliseconds: 20_000, durationMilliseconds: 10_000, count: 5)
        expected.append(
            SensorReading(
                source: .watchLink, time: .watchMilliseconds(20_000),
                value: .strokes(StrokeCount(endMilliseconds: 20_000, durationMilliseconds: 10_000, count: 5))))
        for button in WatchLink.Button.allCases {
            bytes += WatchLink.button(milliseconds: 1_479_000, button)
            expected.append(
                SensorReading(source: .watchLink, time: .watchMilliseconds(1_479_000), value: .button(button)))
        }
        bytes += WatchLink.gatt(milliseconds: 12_000, characteristic: 0x2A37, payload: [0x10, 150, 0x03, 0x04])
        expected.append(
            SensorReading(
                source: .watchLinkGATT(characteristic: 0x2A37), time: .watchMilliseconds(12_000),
                value: .heartRate(HeartRateReading(beatsPerMinute: 150, rrIntervals: RRIntervals(ticks: [0x0403])))))
        var decoder = WatchLinkDecoder()
        let readings = decoder.decode(bytes, chunkSizes: [3, 50, 1, 1000])
        #expect(readings == expected)
        #expect(decoder.counters.framesDecoded == expected.count && decoder.counters.droppedFrames == 0)
        #expect(decoder.counters.resyncBytesSkipped == 0 && decoder.counters.unknownMessages == 0)
    }

    @Test func theDocumentedExamplesHoldTheirChecksums() throws {
        let documentation = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "../../docs/watch-link.md"), encoding: .utf8)
        let examples = documentation.split(separator: "\n").filter { $0.hasPrefix("$WL1,") && !$0.contains("<") }
        #expect(examples.count == 8)
        for example in examples {
            let star = try #require(example.lastIndex(of: "*"))
            let body = String(example[example.index(after: example.startIndex)..<star])
            #expect(textLine(body) == Array((example + "\r\n").utf8), "checksum of \(example)")
        }
        let gatt = WatchLink.gatt(milliseconds: 12_000, characteristic: 0x2A37, payload: [0x10, 0x96, 0x03, 0x04])
        #expect(gatt == Array("$WL1,GATT,12000,2A37,10960304*61\r\n".utf8), "the encoder writes the documented line")
        var decoder = WatchLinkDecoder()
        let readings = decoder.decode(examples.flatMap { Array(($0 + "\r\n").utf8) })
        #expect(readings.count == 8 && decoder.counters.framesDecoded == 8)
        #expect(readings.last?.heartRate?.rrIntervals.first == 1027.0 / 1024)
        let distance = WatchLink.distance(endMilliseconds: 20_000, durationMilliseconds: 1000, meters: 1.713)
        #expect(distance == Array("$WL1,DST,20000,1000,1.713*70\r\n".utf8), "the encoder writes the documented line")
        #expect(
            readings.contains {
                $0.value == .distance(WatchDistance(endMilliseconds: 20_000, durationMilliseconds: 1000, meters: 1.713))
                    && $0.time == .watchMilliseconds(20_000)
            })
    }

    @Test func otherVersionsUnknownTypesAndMalformedLinesAreCounted() {
        let lines = [
            "WL2,BTN,100,LAP",  // a later version: counted, not decoded
            "WL,BTN,100,LAP",
            "GPGGA,123519,4807.038,N,01131.324,E,1,08,0.9,545.4,M,46.9,M,,",  // NMEA on the watch port
            "WL1,IMU,100,1,2,3",  // unknown type
            "WL1,GATT,100,180D,00",  // a characteristic we do not decode
            "WL1,LEN,1,2,X,FR,3", "WL1,LEN,1,2,A,XX,3", "WL1,LEN,1,2,A,FR", "WL1,LEN,1,2,A,FR,3,4", "WL1,BTN,12,JUMP",
            "WL1,BTN,-5,LAP", "WL1,STK,1,2", "WL1,GATT,1,2A37,1", "WL1,GATT,1,2A37,ZZ", "WL1,GATT,1,2A37,",
            "WL1,GATT,1,2A3,0050", "WL1,HELLO", "WL1",
        ]
        var decoder = WatchLinkDecoder()
        let readings = decoder.decode(lines.flatMap { textLine($0) } + textLine("WL1,BTN,7,STOP", checksum: 0))
        #expect(readings.isEmpty)
        #expect(decoder.counters.unsupportedVersions == 2)
        #expect(decoder.counters.unknownMessages == 3)
        #expect(decoder.counters.malformedFrames == lines.count - 5)
        #expect(decoder.counters.badChecksums == 1)
        #expect(decoder.counters.framesDecoded == 0)
    }

    @Test func tunnelledSpeedAndCadenceUseTheLinesMillisecondsAsStopClock() {
        var bytes: [UInt8] = []
        bytes += WatchLink.gatt(milliseconds: 0, characteristic: 0x2A5B, payload: [0x01] + le32(10) + le16(0))
        let moving: [UInt8] = [0x01] + le32(12) + le16(1024)
        for milliseconds in [1000, 2000, 3999, 4000] {
            bytes += WatchLink.gatt(milliseconds: milliseconds, characteristic: 0x2A5B, payload: moving)
        }
        var decoder = WatchLinkDecoder()
        let readings = decoder.decode(bytes)
        let speeds = readings.compactMap { $0.speedCadence?.speed }
        #expect(speeds.count == 4)
        #expect(speeds.prefix(3).allSatisfy { close($0, 2 * 2.105) } && speeds.last == 0)
        #expect(readings.allSatisfy { $0.source == .watchLinkGATT(characteristic: 0x2A5B) })
    }

    @Test func splitAtEveryByteWithGarbage() {
        let bytes =
            Array("noise\r\n".utf8) + WatchLink.hello(device: "w") + [0xFF, 0x00]
            + WatchLink.length(
                endMilliseconds: 5, durationMilliseconds: 4, kind: .active, style: .butterfly, strokes: 9)
            + WatchLink.gatt(milliseconds: 9, characteristic: 0x2A63, payload: le16(0) + le16(200))
            + textLine("WL1,BTN,3,LAP", checksum: 1) + WatchLink.button(milliseconds: 10, .lap)
        expectSplitInvariant({ WatchLinkDecoder() }, bytes)
        var decoder = WatchLinkDecoder()
        #expect(decoder.decode(bytes).count == 4)
        #expect(decoder.counters.resyncBytesSkipped == 9 && decoder.counters.badChecksums == 1)
    }

    @Test func anOversizedLineIsDroppedAndTheBufferBounded() {
        var decoder = WatchLinkDecoder()
        var readings: [SensorReading] = []
        let long = WatchLink.gatt(
            milliseconds: 1, characteristic: 0x2A37, payload: [0x10, 60] + [UInt8](repeating: 4, count: 140))
        #expect(long.count > 256)
        decoder.decode(long, into: &readings)
        #expect(decoder.pendingByteCount < 256)
        decoder.decode(WatchLink.button(milliseconds: 2, .pause), into: &readings)
        #expect(readings.map(\.value) == [.button(.pause)])
        #expect(decoder.counters.oversizedFrames == 1)
    }
}
