/// The Python server `PyMobileDevice3Helper` runs: hadeploy's own, shipped inside the binary (no file
/// to install or find) and handed to pymobiledevice3's interpreter on stdin. Its protocol, one JSON
/// object per line each way:
///
/// - first, from the helper: `{"ready": true, "version", "python", "pid"}`, or `{"ready": false,
///   "error"}` when pymobiledevice3 lacks the API (then it exits 3);
/// - requests `{"id", "op", "deadline", …}`: `lookup` (`imageType`, `warm`: build the tunnel ahead once
///   the image is found mounted) → `{"mounted"}`; `launch` (`bundleID`, `arguments`, `environment`,
///   `killExisting`) → `{"pid"}`; `screenshot` → `{"png"}` (base64); `forgetTunnel` → `{}`;
/// - replies `{"id", "ok": true, "result", "rebuilt"?, "tunnels", "seconds"}` or `{"id", "ok": false,
///   "error", "timedOut"?, "unsupported"?, "tunnels", "seconds"}`. `tunnels`: how many tunnels this
///   helper has built.
enum PyMobileDevice3HelperScript {
    static let source = #"""
        # hadeploy's pymobiledevice3 helper: one process per device per run, serving hadeploy's steps
        # through pymobiledevice3's own Python API. Requests arrive on stdin and replies leave on stdout,
        # one JSON object per line, one request at a time. The developer tunnel is built once and reused;
        # a tunnel that dropped is rebuilt once per request and the reply says why. The helper ends when
        # its stdin closes or its parent goes.
        import asyncio, base64, gc, importlib.util, json, logging, os, sys, threading, time

        UDID = os.environ.get("HADEPLOY_UDID") or None
        # Replies only on the real stdout; whatever a library prints goes to stderr.
        _replies = os.fdopen(os.dup(1), "wb", buffering=0)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        logging.basicConfig(
            level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


        def reply(message):
            _replies.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")


        def describe(error):
            text = str(error).strip()
            return f"{type(error).__name__}: {text}" if text else type(error).__name__


        # The lockdown side first (the mount lookup needs only it); the tunnel and DVT modules, as heavy
        # again, are imported on a thread meanwhile.
        try:
            from pymobiledevice3._version import __version__ as PMD3_VERSION
            from pymobiledevice3.lockdown import create_using_usbmux
            if importlib.util.find_spec("pymobiledevice3.remote.userspace_tunnel") is None:
                raise ImportError("no pymobiledevice3.remote.userspace_tunnel (an older pymobiledevice3)")
        except Exception as error:
            reply({"ready": False, "error": describe(error)})
            sys.stdout.flush()
            os._exit(3)

        # What a dropped tunnel or device connection raises: worth one rebuild.
        DROPPED = (ConnectionError, OSError, EOFError, asyncio.IncompleteReadError)
        try:
            from pymobiledevice3 import exceptions as _errors
            DROPPED += (_errors.ChannelClosedError, _errors.ConnectionTerminatedError,
                        _errors.NotConnectedError)
        except ImportError:
            pass

        TUNNEL = {}


        def import_tunnel_modules():
            try:
                from pymobiledevice3.remote.userspace_tunnel import UserspaceRsdTunnel
                from pymobiledevice3.services.dvt.instruments.dvt_provider import DvtProvider
                from pymobiledevice3.services.dvt.instruments.process_control import ProcessControl
                from pymobiledevice3.services.dvt.instruments.screenshot import Screenshot
            finally:
                gc.enable()  # off while the modules load (hadeploy's bootstrap turned it off)
            TUNNEL.update(UserspaceRsdTunnel=UserspaceRsdTunnel, DvtProvider=DvtProvider,
                          ProcessControl=ProcessControl, Screenshot=Screenshot)


        class Unsupported(Exception):
            """This pymobiledevice3 lacks the API a request needs."""


        class Failed(Exception):
            pass


        class TunnelGone(Exception):
            pass


        class Device:
            def __init__(self):
                self.lockdown = None
                self.tunnel = None
                self.tunnels = 0
                self.modules = None
                self.warming = None

            async def tunnel_modules(self):
                if self.modules is None:
                    self.modules = asyncio.ensure_future(asyncio.to_thread(import_tunnel_modules))
                try:
                    await asyncio.shield(self.modules)
                except Exception as error:
                    raise Unsupported(
                        f"pymobiledevice3's userspace tunnel API cannot be imported: {describe(error)}")

            async def close_lockdown(self):
                lockdown, self.lockdown = self.lockdown, None
                if lockdown is not None:
                    try:
                        await asyncio.wait_for(lockdown.close(), 3)
                    except Exception:
                        pass

            async def close_tunnel(self):
                tunnel, self.tunnel = self.tunnel, None
                if tunnel is not None:
                    try:
                        await asyncio.wait_for(tunnel.aclose(), 5)
                    except Exception:
                        pass

            async def rsd(self):
                await self.tunnel_modules()
                if self.tunnel is not None and self.tunnel.rsd is None:
                    # pymobiledevice3's transport watcher tore it down: the device went away meanwhile.
                    await self.close_tunnel()
                    raise TunnelGone(
                        "the tunnel had closed since the last step (the device disconnected or rebooted)")
                if self.tunnel is None:
                    tunnel = TUNNEL["UserspaceRsdTunnel"](serial=UDID)
                    await tunnel.aopen()
                    self.tunnel = tunnel
                    self.tunnels += 1
                return self.tunnel.rsd

            def warm(self):
                """Builds the tunnel ahead of the step that needs it (after a lookup found the image
                mounted: the device lists its developer services only then)."""
                async def build():
                    try:
                        await self.rsd()
                    except Exception:
                        pass  # the step that needs it tries again and says why
                if self.warming is None and self.tunnel is None:
                    self.warming = asyncio.ensure_future(build())

            async def settled(self):
                warming, self.warming = self.warming, None
                if warming is not None:
                    await asyncio.shield(warming)

            async def with_lockdown(self, body):
                rebuilt = None
                for attempt in (0, 1):
                    try:
                        if self.lockdown is None:
                            self.lockdown = await create_using_usbmux(serial=UDID)
                        return await body(self.lockdown), rebuilt
                    except DROPPED as error:
                        await self.close_lockdown()
                        if attempt == 1:
                            raise Failed(f"{rebuilt}; the new connection failed too: {describe(error)}")
                        rebuilt = f"the lockdown connection dropped ({describe(error)}) and was reopened"

            async def with_tunnel(self, body):
                await self.settled()
                rebuilt = None
                for attempt in (0, 1):
                    try:
                        return await body(await self.rsd()), rebuilt
                    except (TunnelGone,) + DROPPED as error:
                        await self.close_tunnel()
                        if attempt == 1:
                            raise Failed(f"{rebuilt}; the rebuilt one failed too: {describe(error)}")
                        rebuilt = f"the developer tunnel dropped ({describe(error)}) and was rebuilt"


        async def lookup(device, request):
            # MobileImageMounterService.lookup_image's request and reading of the answer, on the lockdown
            # service itself: its module (with the image signing code behind it) adds a tenth of a second
            # of imports to the mount step, for one request.
            async def body(lockdown):
                service = await lockdown.start_lockdown_service("com.apple.mobile.mobile_image_mounter")
                try:
                    answer = await service.send_recv_plist(
                        {"Command": "LookupImage", "ImageType": request.get("imageType", "Personalized")})
                finally:
                    await service.close()
                if not answer or not answer.get("ImagePresent", True):
                    return {"mounted": False}
                signature = answer.get("ImageSignature", [])
                return {"mounted": bool(signature) if isinstance(signature, list) else True}
            result = await device.with_lockdown(body)
            if result[0]["mounted"] and request.get("warm", False):
                device.warm()
            return result


        async def launch(device, request):
            async def body(rsd):
                async with TUNNEL["DvtProvider"](rsd) as dvt, TUNNEL["ProcessControl"](dvt) as control:
                    pid = await control.launch(
                        bundle_id=request["bundleID"], arguments=request.get("arguments", []),
                        kill_existing=request.get("killExisting", True),
                        environment=request.get("environment", {}))
                    return {"pid": pid}
            return await device.with_tunnel(body)


        async def screenshot(device, request):
            async def body(rsd):
                async with TUNNEL["DvtProvider"](rsd) as dvt, TUNNEL["Screenshot"](dvt) as shot:
                    return {"png": base64.b64encode(await shot.get_screenshot()).decode()}
            return await device.with_tunnel(body)


        async def forget_tunnel(device, request):
            """The device's developer services changed (an image was mounted): build the tunnel anew."""
            await device.settled()
            await device.close_tunnel()
            return {}, None


        OPERATIONS = {
            "lookup": lookup, "launch": launch, "screenshot": screenshot, "forgetTunnel": forget_tunnel}


        async def serve():
            loop = asyncio.get_running_loop()
            requests = asyncio.Queue()

            def read():
                for line in sys.stdin.buffer:
                    loop.call_soon_threadsafe(requests.put_nowait, line)
                loop.call_soon_threadsafe(requests.put_nowait, None)

            threading.Thread(target=read, daemon=True, name="requests").start()
            device = Device()
            device.modules = asyncio.ensure_future(asyncio.to_thread(import_tunnel_modules))
            reply({"ready": True, "version": PMD3_VERSION, "python": sys.version.split()[0],
                   "pid": os.getpid()})
            while True:
                line = await requests.get()
                if line is None:
                    break
                try:
                    request = json.loads(line)
                except ValueError:
                    reply({"id": None, "ok": False, "error": "not a JSON request"})
                    continue
                request.update(request.pop("args", None) or {})
                ident = request.get("id")
                operation = OPERATIONS.get(request.get("op"))
                if operation is None:
                    reply({"id": ident, "ok": False, "error": f"unknown operation {request.get('op')!r}"})
                    continue
                budget = max(1.0, float(request.get("deadline", 60)))
                started = time.monotonic()
                try:
                    result, rebuilt = await asyncio.wait_for(operation(device, request), budget)
                    answer = {"id": ident, "ok": True, "result": result}
                    if rebuilt:
                        answer["rebuilt"] = rebuilt
                except asyncio.TimeoutError:
                    # What was in flight may be wedged: the next request starts from fresh connections.
                    await device.close_tunnel()
                    await device.close_lockdown()
                    answer = {"id": ident, "ok": False, "timedOut": True,
                              "error": f"no answer from the device within {budget:.0f} s"}
                except Unsupported as error:
                    answer = {"id": ident, "ok": False, "unsupported": True, "error": str(error)}
                except Failed as error:
                    answer = {"id": ident, "ok": False, "error": str(error)}
                except Exception as error:
                    answer = {"id": ident, "ok": False, "error": describe(error)}
                answer["tunnels"] = device.tunnels
                answer["seconds"] = round(time.monotonic() - started, 3)
                reply(answer)
            try:
                await asyncio.wait_for(asyncio.gather(device.settled(), return_exceptions=True), 3)
                await asyncio.wait_for(
                    asyncio.gather(device.close_tunnel(), device.close_lockdown()), 5)
            except Exception:
                pass


        def watch_parent():
            parent = os.getppid()
            while True:
                time.sleep(1)
                if os.getppid() != parent:
                    os._exit(0)


        threading.Thread(target=watch_parent, daemon=True, name="parent").start()
        try:
            asyncio.run(serve())
        finally:
            os._exit(0)
        """#
}
