-- Internal Lua glue, run once when the scripting engine starts (chunk "=redis_internal").
--
-- It reproduces the environment Redis 7.0 gives scripts: readonly globals and library
-- tables (Redis patches Lua for that; here each protected table is an empty proxy in front
-- of the real one, and the raw accessors know about proxies), errors for nonexistent
-- globals, and the wrappers that run scripts and redis.call.
--
-- Arguments: the real globals table, the error handler (Rust: it reads the Lua stack to find
-- where the script failed), the names of the library tables to protect, and a Rust helper
-- giving the text of an error raised by a Rust function.
local G, error_handler, protected_names, error_text_of = ...

local error, type, tostring, setmetatable, getmetatable =
    error, type, tostring, setmetatable, getmetatable
local raw_next, raw_get, raw_set, raw_ipairs, raw_loadstring, raw_load, raw_setfenv =
    next, rawget, rawset, ipairs, loadstring, load, setfenv

local READONLY = 'Attempt to modify a readonly table'
local backing_of = setmetatable({}, { __mode = 'k' })

local function refuse_write()
    error(READONLY, 2)
end

local function protect(t)
    local proxy = {}
    backing_of[proxy] = t
    setmetatable(proxy, { __index = t, __newindex = refuse_write, __metatable = false })
    return proxy
end

-- Reading a global that does not exist is an error, as in Redis.
setmetatable(G, {
    __index = function(_, name)
        error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
    end,
})

for _, name in raw_ipairs(protected_names) do
    raw_set(G, name, protect(raw_get(G, name)))
end
local globals = protect(G)
raw_set(G, '_G', globals)

-- Raw access and iteration see through proxies; writes to them are refused.
local function backing(t)
    return backing_of[t] or t
end
raw_set(G, 'next', function(t, k)
    return raw_next(backing(t), k)
end)
local wrapped_next = raw_get(G, 'next')
raw_set(G, 'pairs', function(t)
    if type(t) ~= 'table' then
        error("bad argument #1 to 'pairs' (table expected, got " .. type(t) .. ")", 2)
    end
    return wrapped_next, t, nil
end)
raw_set(G, 'ipairs', function(t)
    return raw_ipairs(backing(t))
end)
raw_set(G, 'rawget', function(t, k)
    return raw_get(backing(t), k)
end)
raw_set(G, 'rawset', function(t, k, v)
    if backing_of[t] then
        error(READONLY, 0)
    end
    return raw_set(t, k, v)
end)
raw_set(G, 'setmetatable', function(t, mt)
    if backing_of[t] then
        error(READONLY, 0)
    end
    return setmetatable(t, mt)
end)
-- Code compiled from inside a script sees the same protected globals.
raw_set(G, 'loadstring', function(...)
    local f, e = raw_loadstring(...)
    if f then
        raw_setfenv(f, globals)
    end
    return f, e
end)
raw_set(G, 'load', function(...)
    local f, e = raw_load(...)
    if f then
        raw_setfenv(f, globals)
    end
    return f, e
end)

raw_set(G, '__redis__err__handler', error_handler)

-- Redis's pcall hands scripts the text of an error table (`err`), not the table; errors
-- raised by Rust functions (Redis's C functions) become their text too.
local raw_pcall = pcall
local function pcall_result(ok, ...)
    if ok then
        return true, ...
    end
    local e = ...
    if type(e) == 'userdata' then
        e = error_text_of(e)
    elseif type(e) == 'table' then
        local text = raw_get(e, 'err')
        if type(text) == 'string' or type(text) == 'number' then
            e = text
        end
    end
    return false, e
end
raw_set(G, 'pcall', function(...)
    return pcall_result(raw_pcall(...))
end)

-- Runs a script body or a function with the error handler; returns ok, result. An EVAL
-- body (`eval` true) gets `keys` and `args` as the globals KEYS and ARGV, a function as its
-- arguments; library code (`keys` nil) gets nothing.
local xpcall = xpcall
local function run(f, keys, args, eval)
    if eval then
        raw_set(G, 'KEYS', keys)
        raw_set(G, 'ARGV', args)
        return xpcall(f, error_handler)
    end
    if keys == nil then
        return xpcall(f, error_handler)
    end
    return xpcall(function()
        return f(keys, args)
    end, error_handler)
end

return globals, run
